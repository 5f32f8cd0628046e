"""The installed package ships its templates: build the wheel, install it into a fresh venv, render."""

from __future__ import annotations

import subprocess
import sys
import venv
import zipfile

import pytest
from conftest import REPO, tree

from kernelgen.record import RECORD, decode_record


@pytest.mark.slow
def test_wheel_installs_and_renders(tmp_path):
    pytest.importorskip("build", reason="needs the 'build' package (pip install -e '.[test]')")
    dist = tmp_path / "dist"
    subprocess.run([sys.executable, "-m", "build", "--wheel", "--outdir", str(dist), str(REPO)],
                   check=True, capture_output=True, text=True, timeout=600)
    wheel = next(dist.glob("kernelgen-*.whl"))
    names = zipfile.ZipFile(wheel).namelist()
    # Every template file ships, dot files and {{ }} names included.
    templates = {f"kernelgen/_templates/{p.relative_to(REPO / 'templates').as_posix()}"
                 for p in (REPO / "templates").rglob("*") if p.is_file() and "__pycache__" not in p.parts}
    assert "kernelgen/_templates/package/.gitignore.jinja" in templates
    assert templates <= set(names), sorted(templates - set(names))[:5]
    assert "kernelgen/py.typed" in names

    env_dir = tmp_path / "venv"
    venv.create(env_dir, with_pip=True)
    python = env_dir / "bin" / "python"
    subprocess.run([str(python), "-m", "pip", "install", "-q", str(wheel)], check=True, timeout=600)
    out = tmp_path / "out"
    result = subprocess.run(
        [str(env_dir / "bin" / "kernelgen"), "new", "muladd", "--kind", "elementwise", "--inputs", "a,b,c",
         "--expr", "a*b+c", "--defaults", "--output", str(out)],
        capture_output=True, text=True, cwd=tmp_path, timeout=120,
    )
    assert result.returncode == 0, result.stderr
    # Rendered from the installed copy (not this checkout), and identical to the golden example.
    where = subprocess.run([str(python), "-c", "import kernelgen.paths as p; print(p.template_dir())"],
                           capture_output=True, text=True, check=True, cwd=tmp_path).stdout
    assert str(env_dir) in where
    # The merge record is not committed with the examples (tests/test_golden.py): compare the rest, and
    # check that the record holds exactly what was generated.
    fresh, golden = tree(out / "muladd"), tree(REPO / "examples" / "muladd")
    record = decode_record(fresh.pop(RECORD), RECORD)
    golden.pop(RECORD, None)
    assert fresh == golden
    assert record == {rel: data for rel, data in fresh.items() if not rel.startswith(".kernelgen/")}
