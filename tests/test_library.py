"""Op libraries: `kernelgen add` grows a package; ops share one build and one namespace."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from click.testing import CliRunner
from conftest import failing_replace, tree

from kernelgen import __version__
from kernelgen._jinja import TEMPLATE_VERSION
from kernelgen.cli import main


def invoke(*args: str):
    return CliRunner().invoke(main, list(args))


@pytest.fixture
def lib(tmp_path):
    result = invoke("new", "team-ops", "--op", "muladd", "--inputs", "a,b,c", "--expr", "a*b+c", "--namespace", "team",
                    "--defaults", "-o", str(tmp_path))
    assert result.exit_code == 0, result.output
    return tmp_path / "team-ops"


def test_add_gives_the_op_its_own_files_and_lists_it(lib):
    result = invoke("add", "mm", "--kind", "matmul", "--defaults", "--package", str(lib))
    assert result.exit_code == 0, result.output
    files = tree(lib)
    for rel in ("team_ops/csrc/mm/mm.cpp", "team_ops/csrc/mm/cuda/mm_kernel.cu", "team_ops/ops/mm.py",
                "tests/test_mm.py", "benchmarks/bench_mm.py"):
        assert rel in files, rel
    # One copy of the infrastructure per package.
    assert [f for f in files if f.endswith(("setup.py", "_build.py", "_loader.py", "harness.py"))] == [
        "benchmarks/harness.py", "setup.py", "team_ops/_build.py", "team_ops/_loader.py"]
    init = (lib / "team_ops/__init__.py").read_text()
    assert "from .ops.muladd import muladd" in init and "from .ops.mm import mm" in init
    build = (lib / "team_ops/_build.py").read_text()
    assert 'NAMESPACE = "team"' in build and '"muladd",\n    "mm",\n)' in build
    readme = (lib / "README.md").read_text()
    assert "`torch.ops.team.muladd`" in readme and "`torch.ops.team.mm`" in readme
    cpp = (lib / "team_ops/csrc/mm/mm.cpp").read_text()
    assert "TORCH_LIBRARY_FRAGMENT(team, m)" in cpp
    assert "added team::mm (matmul)" in result.output


def test_ops_lists_the_package(lib):
    assert invoke("add", "gelu", "--inputs", "x", "--expr", "x*sigmoid(1.702*x)", "--dtypes", "fp32", "--defaults",
                  "--package", str(lib)).exit_code == 0
    result = invoke("ops", str(lib), "--json")
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert data["package"] == "team_ops" and data["namespace"] == "team" and data["abi"] == "stable"
    assert [op["name"] for op in data["ops"]] == ["muladd", "gelu"]
    assert data["ops"][1]["dtypes"] == ["float32"] and data["ops"][1]["torch_op"] == "torch.ops.team.gelu"
    text = invoke("ops", str(lib))
    assert "torch.ops.team.gelu" in text.output and "2 op(s)" in text.output and "stable ABI" in text.output


def test_add_follows_the_package_abi(tmp_path):
    result = invoke("new", "aten-ops", "--op", "muladd", "--inputs", "a,b,c", "--expr", "a*b+c", "--namespace", "aten_team",
                    "--abi", "full", "--defaults", "-o", str(tmp_path))
    assert result.exit_code == 0, result.output
    lib = tmp_path / "aten-ops"
    for args in (["mm", "--kind", "matmul"], ["gelu", "--inputs", "x", "--expr", "x", "--abi", "full"]):
        result = invoke("add", *args, "--defaults", "--package", str(lib))
        assert result.exit_code == 0, result.output
    for op in ("mm", "gelu"):
        cpp = (lib / f"aten_ops/csrc/{op}/{op}.cpp").read_text()
        assert "TORCH_LIBRARY_FRAGMENT(aten_team, m)" in cpp and "STABLE" not in cpp
    assert not (lib / "aten_ops/csrc/stable_utils.h").exists()
    assert "abi: full" in (lib / ".copier-answers.yml").read_text()
    result = invoke("add", "relu", "--inputs", "x", "--expr", "x", "--abi", "stable", "--defaults", "--package", str(lib))
    assert result.exit_code == 2 and result.output.strip().splitlines()[-1].endswith(
        "--abi: the package is built on the full ABI, for all its ops (one build); omit --abi")


@pytest.mark.parametrize("args, message", [
    (["muladd", "--inputs", "x", "--expr", "x"], "already has an op 'muladd'"),
    (["muladd_cuda", "--inputs", "x", "--expr", "x"], "muladd_cuda.cpp"),
    (["gelu", "--inputs", "x", "--expr", "x +"], "not a valid expression"),
    (["gelu", "--inputs", "x", "--expr", "x", "--namespace", "other"], "namespace is 'team'"),
    (["gelu", "--inputs", "x", "--expr", "x", "--arch-list", "9.0"], "builds for '8.0;9.0+PTX'"),
    (["gelu", "--inputs", "x", "--expr", "x", "--abi", "full"], "--abi: the package is built on the stable ABI"),
    (["gelu", "--inputs", "x", "--expr", "x", "--abi", "none"], "Invalid value for '--abi'"),
    (["ops", "--inputs", "x", "--expr", "x"], "reserved"),
    (["muladd_backward", "--inputs", "x", "--expr", "x"], "could both register torch.ops.team.muladd_backward"),
    (["muladd_train", "--inputs", "x", "--expr", "x"], "could both register torch.ops.team.muladd_train"),
])
def test_failed_add_exits_2_and_leaves_the_package_byte_for_byte(lib, args, message):
    before = tree(lib)
    result = invoke("add", *args, "--defaults", "--package", str(lib))
    assert result.exit_code == 2, result.output
    assert message in result.output
    assert "Traceback" not in result.output
    assert tree(lib) == before


def test_add_refuses_the_hyphen_twin_of_an_op(lib):
    assert invoke("add", "foo_bar", "--inputs", "x", "--expr", "x", "--defaults", "--package", str(lib)).exit_code == 0
    before = tree(lib)
    result = invoke("add", "foo-bar", "--inputs", "x", "--expr", "x", "--defaults", "--package", str(lib))
    assert result.exit_code == 2 and "already has an op 'foo_bar'" in result.output
    assert tree(lib) == before


def test_add_refuses_an_op_whose_registered_names_another_op_takes(lib):
    # An op named like another's backward op, or the other way round: one of them would replace the other's
    # registration at import (softmax's gradient computed by an op that is not its backward).
    assert invoke("add", "norm_train", "--inputs", "x", "--expr", "x", "--defaults", "--package", str(lib)).exit_code == 0
    before = tree(lib)
    result = invoke("add", "norm", "--kind", "rowwise", "--inputs", "x", "--expr", "x - max(x)", "--defaults",
                    "--package", str(lib))
    assert result.exit_code == 2 and "Traceback" not in result.output
    assert result.output.strip().splitlines()[-1].endswith(
        "op 'norm' and op 'norm_train' could both register torch.ops.team.norm_train (an op registers <op>_backward, "
        "<op>_train, <op>_with_acc); choose another name")
    assert tree(lib) == before


def test_add_that_conflicts_with_an_edit_writes_nothing(lib):
    init = lib / "team_ops/__init__.py"
    init.write_text(init.read_text().replace("from .ops.muladd import muladd  # noqa: E402\n",
                                             "from .ops.muladd import muladd  # noqa: E402  (my comment)\n"))
    before = tree(lib)
    result = invoke("add", "gelu", "--inputs", "x", "--expr", "x", "--defaults", "--package", str(lib))
    assert result.exit_code == 1
    assert "conflicts with your edits in team_ops/__init__.py; nothing was written" in result.output
    assert tree(lib) == before


def test_add_keeps_edits_in_shared_files(lib):
    readme = lib / "README.md"
    readme.write_text(readme.read_text() + "\n## Our team's notes\n")
    result = invoke("add", "gelu", "--inputs", "x", "--expr", "x", "--defaults", "--package", str(lib))
    assert result.exit_code == 0, result.output
    text = readme.read_text()
    assert "## Our team's notes" in text and "`torch.ops.team.gelu`" in text


def test_add_failing_midway_restores_everything(lib, monkeypatch):
    before = tree(lib)
    with failing_replace(monkeypatch, 5, OSError(28, "No space left on device")):
        result = invoke("add", "gelu", "--inputs", "x", "--expr", "x", "--defaults", "--package", str(lib))
        assert result.exit_code == 1 and "nothing was changed" in result.output
    assert tree(lib) == before
    assert not [p for p in lib.iterdir() if p.name.startswith(".kernelgen-staging")]


def test_add_needs_an_up_to_date_package(lib):
    answers = lib / ".copier-answers.yml"
    answers.write_text(answers.read_text().replace(f"_template_version: '{TEMPLATE_VERSION}'", "_template_version: '3'"))
    result = invoke("add", "gelu", "--inputs", "x", "--expr", "x", "--defaults", "--package", str(lib))
    assert result.exit_code == 1 and "run `kernelgen update" in result.output


def test_add_outside_a_package(tmp_path):
    result = invoke("add", "gelu", "--inputs", "x", "--expr", "x", "--defaults", "--package", str(tmp_path))
    assert result.exit_code == 1 and "is this a directory generated by kernelgen?" in result.output


def test_hyphen_and_underscore_twins_are_refused(tmp_path):
    assert invoke("new", "foo_bar", "--inputs", "x", "--expr", "x", "--defaults", "-o", str(tmp_path)).exit_code == 0
    result = invoke("new", "foo-bar", "--inputs", "x", "--expr", "x", "--defaults", "-o", str(tmp_path))
    assert result.exit_code == 1 and "is the same package as 'foo-bar'" in result.output
    assert sorted(p.name for p in tmp_path.iterdir()) == ["foo_bar"]


def test_update_after_add_is_a_no_op_that_writes_nothing(lib):
    assert invoke("add", "mm", "--kind", "matmul", "--defaults", "--package", str(lib)).exit_code == 0
    stamps = {p: p.stat().st_mtime_ns for p in lib.rglob("*") if p.is_file()}
    result = invoke("update", str(lib))
    assert result.exit_code == 0 and "is up to date" in result.output
    assert {p: p.stat().st_mtime_ns for p in lib.rglob("*") if p.is_file()} == stamps




def _build(root: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k != "KERNELGEN_REQUIRE_CUDA"}
    env["KERNELGEN_CPU_ONLY"] = "1"  # the registration path is the same; CPU-only builds twice as fast
    done = subprocess.run([sys.executable, "setup.py", "build_ext", "--inplace"], cwd=root, env=env,
                          capture_output=True, text=True, timeout=1800)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]


@pytest.mark.build
def test_packages_sharing_a_namespace_load_together_and_a_clash_raises(tmp_path):
    """Two packages in namespace `team` load in one process; a third that redefines team::mm
    raises ImportError naming the op and the package that holds it, and the process lives on."""
    pytest.importorskip("torch", reason="building a generated op needs torch")
    commands = [
        ["new", "alpha", "--op", "scale2", "--inputs", "x", "--expr", "x*2", "--namespace", "team", "--dtypes", "fp32"],
        ["add", "mm", "--kind", "matmul", "--dtypes", "fp32", "--package", str(tmp_path / "alpha")],
        ["new", "beta", "--op", "plus1", "--inputs", "x", "--expr", "x+1", "--namespace", "team", "--dtypes", "fp32"],
        ["new", "clash", "--op", "mm", "--kind", "matmul", "--namespace", "team", "--dtypes", "fp32"],
    ]
    for argv in commands:
        extra = ["-o", str(tmp_path)] if argv[0] == "new" else []
        result = invoke(*argv, "--defaults", *extra)
        assert result.exit_code == 0, result.output
    for name in ("alpha", "beta", "clash"):
        _build(tmp_path / name)
    script = textwrap.dedent("""
        import torch, alpha, beta
        x = torch.arange(4.0)
        assert torch.equal(torch.ops.team.scale2(x), x * 2) and torch.equal(beta.plus1(x), x + 1)
        assert torch.allclose(alpha.mm(torch.eye(3), torch.ones(3, 2)), torch.ones(3, 2))
        try:
            import clash
        except ImportError as err:
            print("IMPORTERROR", err)
        print("ALIVE")
    """)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(str(tmp_path / n) for n in ("alpha", "beta", "clash")))
    done = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    lines = done.stdout.strip().splitlines()
    assert lines[-1] == "ALIVE"
    assert lines[0].startswith("IMPORTERROR clash: cannot load: the op team::mm is already defined")
    assert "the package 'alpha'" in lines[0]


def test_triton_backend_is_python_only(tmp_path):
    result = invoke("new", "tpkg", "--op", "gelu_tl", "--backend", "triton", "--inputs", "x",
                    "--expr", "x * sigmoid(1.702 * x)", "--defaults", "-o", str(tmp_path))
    assert result.exit_code == 0, result.output
    root = tmp_path / "tpkg"
    files = tree(root)
    assert not [f for f in files if f.startswith("tpkg/csrc/gelu_tl")]
    ops = (root / "tpkg/ops/gelu_tl.py").read_text()
    assert "@torch.library.triton_op(_OP, mutates_args=())" in ops and "wrap_triton(_gelu_tl_kernel)" in ops
    assert "tl.program_id(0).to(tl.int64) * BLOCK" in ops  # int64 offsets
    assert '@torch.library.register_kernel(_OP, "cpu")' in ops and "register_autograd" in ops
    build = (root / "tpkg/_build.py").read_text()
    assert "EXTENSION_OPS = (\n)" in build and "HAS_EXTENSION = bool(EXTENSION_OPS)" in build
    assert "backend: triton" in (root / ".copier-answers.yml").read_text()
    # Adding a CUDA op of the same formula: the Triton op's benchmark races it.
    assert invoke("add", "gelu", "--inputs", "x", "--expr", "x*sigmoid(1.702*x)", "--defaults",
                  "--package", str(root)).exit_code == 0
    bench = (root / "benchmarks/bench_gelu_tl.py").read_text()
    assert 'twins={"gelu": lib.gelu},' in bench
    assert "EXTENSION_OPS = (\n    \"gelu\",\n)" in (root / "tpkg/_build.py").read_text()


def test_triton_matmul_is_refused(lib):
    before = tree(lib)
    result = invoke("add", "mm", "--kind", "matmul", "--backend", "triton", "--defaults", "--package", str(lib))
    assert result.exit_code == 2 and "generated in CUDA C++ only" in result.output
    assert tree(lib) == before


@pytest.mark.build
def test_triton_package_installs_without_a_compiler_and_passes_its_cpu_tests(tmp_path):
    """No C++: the package imports with no build step; its suite runs on CPU (GPU tests skip), and
    the generated kernel, run by Triton's interpreter on the CPU, matches the reference."""
    pytest.importorskip("triton", reason="the Triton backend needs triton")
    for argv in (["new", "tpkg", "--op", "gelu_tl", "--backend", "triton", "--inputs", "x",
                  "--expr", "x * sigmoid(1.702 * x)", "-o", str(tmp_path)],
                 ["add", "quad_tl", "--backend", "triton", "--inputs", "a,b,c,d", "--expr",
                  "a * b + min(c, d) - abs(a) / 3", "--package", str(tmp_path / "tpkg")]):
        result = invoke(*argv, "--defaults")
        assert result.exit_code == 0, result.output
    root = tmp_path / "tpkg"
    env = {k: v for k, v in os.environ.items() if k not in ("CUDA_HOME", "KERNELGEN_REQUIRE_CUDA")}
    env["PATH"] = "/usr/bin:/bin"  # no nvcc anywhere
    tests = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"], cwd=root, env=env,
                           capture_output=True, text=True, timeout=900)
    assert tests.returncode == 0, tests.stdout[-4000:] + tests.stderr[-2000:]
    assert " passed" in tests.stdout and " failed" not in tests.stdout
    check = textwrap.dedent("""
        import torch, triton, triton.language as tl
        from tpkg.ops import gelu_tl as m, quad_tl as q
        for mod, name, n_in in ((m, "gelu_tl", 1), (q, "quad_tl", 4)):
            kernel = getattr(mod, f"_{name}_kernel")
            for dtype, acc in ((torch.float32, tl.float32), (torch.float64, tl.float64), (torch.bfloat16, tl.float32)):
                n = 3000  # three programs of 1024, the last one ragged
                xs = [torch.randn(n, dtype=dtype) for _ in range(n_in)]
                out = torch.full((n,), float("nan"), dtype=dtype)
                kernel[(triton.cdiv(n, 1024),)](*xs, out, n, BLOCK=1024, ACC=acc)
                opmath = torch.float32 if dtype == torch.bfloat16 else dtype
                want = mod.reference(*(x.to(opmath) for x in xs)).to(dtype)
                tol = dict(rtol=1.6e-2, atol=8e-3) if dtype == torch.bfloat16 else dict(rtol=1e-5, atol=1e-6)
                torch.testing.assert_close(out, want, **tol)
        print("INTERPRETER OK")
    """)
    interp = subprocess.run([sys.executable, "-c", check], cwd=root, env=dict(env, TRITON_INTERPRET="1"),
                            capture_output=True, text=True, timeout=300)
    assert interp.returncode == 0 and "INTERPRETER OK" in interp.stdout, interp.stderr[-3000:]


def test_two_builds_side_by_side_are_refused(tmp_path):
    """An old _C.cpython-*.so next to a new _C.abi3.so: the loader refuses to guess which one Python loads."""
    pytest.importorskip("torch", reason="importing a generated package needs torch")
    assert invoke("new", "twob", "--inputs", "x", "--expr", "x", "--dtypes", "fp32", "--defaults",
                  "-o", str(tmp_path)).exit_code == 0
    root = tmp_path / "twob"
    script = textwrap.dedent("""
        import importlib.util, sys
        spec = importlib.util.spec_from_file_location("b", "twob/_build.py")
        build = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(build)
        build.write_build_info(False)
        for name in ("_C.abi3.so", "_C.cpython-311-x86_64-linux-gnu.so"):
            open(f"twob/{name}", "wb").close()
        try:
            import twob
        except ImportError as err:
            print("IMPORTERROR", err)
    """)
    done = subprocess.run([sys.executable, "-c", script], cwd=root, capture_output=True, text=True, timeout=300)
    assert "IMPORTERROR twob: several compiled extensions" in done.stdout, done.stdout + done.stderr[-2000:]
    assert "_C.abi3.so, _C.cpython-311-x86_64-linux-gnu.so" in done.stdout


# ---- issue 30 -------------------------------------------------------------------------------------


def test_add_refuses_an_answers_file_with_a_duplicate_key(lib):
    """Issue 30, item 5: `name: other` appended to the answers file made `add` delete the generated
    files and create other/; the duplicate key is refused, and nothing is written."""
    answers = lib / ".copier-answers.yml"
    answers.write_text(answers.read_text() + "name: other\n")
    before = tree(lib)
    result = invoke("add", "gelu", "--inputs", "x", "--expr", "x", "--defaults", "--package", str(lib))
    assert result.exit_code == 1, result.output
    assert "has the key 'name' twice" in result.output and str(answers) in result.output
    assert tree(lib) == before and not (lib / "other").exists()


@pytest.mark.parametrize("old, new, difference", [
    ("name: team-ops", "name: other", "name: recorded 'team-ops', now 'other'"),
    ("expr: a * b + c", "expr: a * b - c", "ops[0].expr: recorded 'a * b + c', now 'a * b - c'"),
    ("namespace: team", "namespace: other", "namespace: recorded 'team', now 'other'"),
])
def test_add_refuses_hand_edits_of_the_answers_file_and_points_to_update(lib, old, new, difference):
    """Issue 30, item 5: `add` rewrites the answers file from what it read, so a hand edit would be
    applied silently (a rename deleted 8 generated files). It refuses, and says which field."""
    answers = lib / ".copier-answers.yml"
    text = answers.read_text()
    assert old in text
    answers.write_text(text.replace(old, new, 1))
    before = tree(lib)
    result = invoke("add", "gelu", "--inputs", "x", "--expr", "x", "--defaults", "--package", str(lib))
    assert result.exit_code == 1, result.output
    assert f"{answers} was edited by hand since kernelgen wrote it ({difference})" in result.output, result.output
    assert f"apply the edit with `kernelgen update {lib}`" in result.output
    assert tree(lib) == before


def test_add_accepts_an_answers_file_that_differs_only_in_comments_and_layout(lib):
    """...and in the stamp of the kernelgen version that wrote it (which changes no output)."""
    answers = lib / ".copier-answers.yml"
    text = answers.read_text().replace("namespace: team", "namespace:   team    # ours") + "# note\n"
    stamp = f"_kernelgen_version: {__version__}"
    assert stamp in text
    answers.write_text(text.replace(stamp, "_kernelgen_version: 0.0.9"))
    result = invoke("add", "gelu", "--inputs", "x", "--expr", "x", "--defaults", "--package", str(lib))
    assert result.exit_code == 0, result.output


def test_bias_without_an_epilogue_adds_the_bias(tmp_path):
    """Issue 30: `--kind matmul --bias` alone was refused with a message about an epilogue the user
    never gave; it now means `--epilogue "acc + bias"`."""
    result = invoke("new", "linear", "--kind", "matmul", "--bias", "--defaults", "-o", str(tmp_path))
    assert result.exit_code == 0, result.output
    answers = (tmp_path / "linear" / ".copier-answers.yml").read_text()
    assert "epilogue: acc + bias" in answers and "bias: true" in answers


@pytest.fixture(scope="module")
def triton_packages(tmp_path_factory):
    """Two Triton-only packages defining team::gelu_tl (no compile step: they import as they are)."""
    root = tmp_path_factory.mktemp("triton")
    for name, expr in (("tri_a", "x * sigmoid(1.702 * x)"), ("tri_b", "x * 2")):
        result = invoke("new", name, "--op", "gelu_tl", "--backend", "triton", "--inputs", "x", "--expr", expr,
                        "--namespace", "team", "--dtypes", "fp32", "--defaults", "-o", str(root))
        assert result.exit_code == 0, result.output
    return root


def _python(root: Path, script: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(root / "tri_a"), str(root / "tri_b"),
                                                        os.environ.get("PYTHONPATH", "")]))
    return subprocess.run([sys.executable, "-c", textwrap.dedent(script)], env=env, capture_output=True, text=True,
                          timeout=300)


def test_reloading_a_package_of_triton_ops_is_not_a_clash(triton_packages):
    """Issue 30, item 7: importlib.reload(pkg) reported that pkg's own op was already defined."""
    pytest.importorskip("torch", reason="importing a generated package needs torch")
    done = _python(triton_packages, """
        import importlib, torch, tri_a
        importlib.reload(tri_a)
        x = torch.linspace(-3, 3, 7)
        torch.testing.assert_close(tri_a.gelu_tl(x), x * torch.sigmoid(1.702 * x))
        print("RELOADED")
    """)
    assert done.returncode == 0 and "RELOADED" in done.stdout, done.stderr[-3000:]


def test_a_clash_between_triton_packages_names_the_other_package(triton_packages):
    """Issue 30, item 8: the ImportError blamed "PyTorch itself (torch/_library/custom_ops.py)"."""
    pytest.importorskip("torch", reason="importing a generated package needs torch")
    done = _python(triton_packages, """
        import tri_a
        try:
            import tri_b
        except ImportError as err:
            print("IMPORTERROR", err)
    """)
    assert done.returncode == 0, done.stderr[-3000:]
    line = next(line for line in done.stdout.splitlines() if line.startswith("IMPORTERROR"))
    expected = (f"IMPORTERROR tri_b: cannot load: the op team::gelu_tl is already defined in this process by the "
                f"package 'tri_a' ({triton_packages / 'tri_a' / 'tri_a' / 'ops' / 'gelu_tl.py'})")
    assert line.startswith(expected), line
    assert "PyTorch itself" not in line
