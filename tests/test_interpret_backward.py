"""docs/device/interpret_backward.py: every launch path of a generated Triton rowwise backward, run by Triton's
interpreter on the CPU, checked against the exact gradients, and a planted error in the row's gradient caught on
the paths that run it (and only there)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner
from conftest import REPO

from kernelgen.cli import main

pytest.importorskip("torch", reason="the generated package runs on torch")
pytest.importorskip("triton", reason="the interpreter is Triton's")

SCRIPT = REPO / "docs" / "device" / "interpret_backward.py"
# A residual RMSNorm whose output reads a max of the row (a mask, written with libdevice's exact operations), a
# tanh and a sqrt (libdevice's), and a weight inside a reduction and outside.
EXPR = "(x + r) * rsqrt(mean((x + r) * (x + r) * w) + 1e-6) * w * tanh(max(x * 0.5)) + sqrt(abs(r) + 1.0)"


@pytest.fixture(scope="module")
def package(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("interpret")
    result = CliRunner().invoke(main, ["new", "interp-ops", "--op", "resrms", "--kind", "rowwise", "--backend", "triton",
                                       "--inputs", "x,r", "--weights", "w", "--expr", EXPR, "--defaults",
                                       "--output", str(out)])
    assert result.exit_code == 0, result.output
    return out / "interp-ops"


def run(package: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(SCRIPT), str(package), "--cols", "300", "--rows", "5"],
                          capture_output=True, text=True, timeout=900)


def test_every_path_matches_the_exact_gradients(package):
    done = run(package)
    assert done.returncode == 0, done.stdout + done.stderr[-2000:]
    line = next(line for line in done.stdout.splitlines() if line.startswith("resrms"))
    for path in ("rows ok", "rows-staged ok", "rows-staged-only ok", "one ok", "one-staged ok", "long ok", "long-known ok",
                 "long-known-fwd ok"):
        assert path in line, line


def test_a_planted_error_fails_the_paths_that_run_it(package, tmp_path):
    mutated = tmp_path / "interp-ops"
    subprocess.run(["cp", "-r", str(package), str(mutated)], check=True)
    op = mutated / "interp_ops" / "ops" / "resrms.py"
    text = op.read_text()
    # The first gradient of x written for a row in registers: 0.1% too large.
    start = text.index("        _d0 = ") + len("        _d0 = ")
    end = text.index("  # d/dx", start)
    op.write_text(text[:start] + "(" + text[start:end] + ") * tl.full((), 1.001, ACC)" + text[end:])
    done = run(mutated)
    assert done.returncode == 1, done.stdout + done.stderr[-2000:]
    line = next(line for line in done.stdout.splitlines() if line.startswith("resrms"))
    assert "one FAILED" in line and "one-staged FAILED" in line, line
    assert "long ok" in line, line  # the long rows' gradients come from the weights' kernel, untouched


def test_a_wrong_saved_value_fails_only_the_paths_that_load_it(package, tmp_path):
    """The long kernel's KNOWN build reads what the forward saved, not a value of its own: the first saved value 1% too
    large fails the paths that load it, and no other."""
    mutated = tmp_path / "interp-ops"
    subprocess.run(["cp", "-r", str(package), str(mutated)], check=True)
    op = mutated / "interp_ops" / "ops" / "resrms.py"
    text = op.read_text()
    save = next(line for line in text.splitlines() if "tl.store(_stats_ptr + tl.program_id(0)" in line)
    saved = save.rstrip(")").rpartition(", ")[2]
    wrong = save.replace(f", {saved})", f", {saved} * 1.01)")
    assert wrong != save and text.count(save) == 2  # the register kernel's and the long kernel's
    op.write_text(text.replace(save, wrong))
    done = run(mutated)
    assert done.returncode == 1, done.stdout + done.stderr[-2000:]
    line = next(line for line in done.stdout.splitlines() if line.startswith("resrms"))
    assert "long-known FAILED" in line and "long-known-fwd FAILED" in line, line
    assert "long ok" in line and "one ok" in line, line
