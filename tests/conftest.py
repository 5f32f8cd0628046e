from __future__ import annotations

import contextlib
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent


def cuda_toolkit() -> str | None:
    """The CUDA toolkit root the generated setup.py would find, or None."""
    for candidate in (os.environ.get("CUDA_HOME"), "/usr/local/cuda"):
        if candidate and Path(candidate, "bin", "nvcc").exists():
            return candidate
    return None


@pytest.fixture
def run_kernelgen(tmp_path):
    """Run the CLI in a subprocess, as a user would; returns CompletedProcess."""

    def run(*args: str, cwd: Path | None = None, input: str | None = None) -> subprocess.CompletedProcess:
        return subprocess.run(
            [sys.executable, "-m", "kernelgen", *args],
            cwd=cwd or tmp_path, capture_output=True, text=True, input=input, timeout=120,
        )

    return run


def tree(root: Path) -> dict[str, bytes]:
    """Every file below root (relative path -> bytes), ignoring build outputs."""
    skip = {"__pycache__", "build", ".pytest_cache"}
    out = {}
    for path in sorted(root.rglob("*")):
        rel = path.relative_to(root)
        if any(part in skip or part.endswith(".egg-info") for part in rel.parts):
            continue
        if path.is_file() and not (path.name.startswith("_C") and path.suffix == ".so") and path.name != "_build_info.json":
            out[str(rel)] = path.read_bytes()
    return out




@contextlib.contextmanager
def failing_replace(monkeypatch, nth: int, error: OSError):
    """Within the block, kernelgen's nth os.replace raises ``error`` (a disk that fills up midway)."""
    import kernelgen.fsutil as fsutil

    real_replace = os.replace
    calls = {"n": 0}

    def flaky(src, dst):
        calls["n"] += 1
        if calls["n"] == nth:
            raise error
        return real_replace(src, dst)

    monkeypatch.setattr(fsutil.os, "replace", flaky)
    try:
        yield
    finally:
        monkeypatch.setattr(fsutil.os, "replace", real_replace)
