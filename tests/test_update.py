"""kernelgen update: the user's edits and the template's changes both survive; conflicts are loud."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner
from conftest import REPO

import kernelgen.render as render
from kernelgen.cli import main

USER_EDIT = ("  return a * b + c;\n", "  return a * b + c * acc_t(2);  // my edit\n")
HEADER = "{{op_name}}/csrc/{{op_name}}.h.jinja"


@pytest.fixture
def op(tmp_path):
    result = CliRunner().invoke(main, ["new", "muladd", "--inputs", "a,b,c", "--expr", "a*b+c", "--defaults", "-o", str(tmp_path)])
    assert result.exit_code == 0, result.output
    return tmp_path / "muladd"


@pytest.fixture
def new_templates(tmp_path, monkeypatch):
    """A copy of the templates that the test may change; kernelgen renders from it."""
    copy = tmp_path / "templates-v2"
    shutil.copytree(REPO / "templates", copy)
    monkeypatch.setattr(render, "template_dir", lambda: copy)
    return copy


def edit(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    assert old in text, f"{old!r} not in {path}"
    path.write_text(text.replace(old, new, 1))


def update(*args):
    return CliRunner().invoke(main, ["update", *args], catch_exceptions=False)


def test_edit_and_template_change_both_survive(op, new_templates):
    header = op / "muladd/csrc/muladd.h"
    edit(header, *USER_EDIT)
    (op / "NOTES.md").write_text("my own file\n")
    edit(new_templates / "elementwise" / HEADER, "#pragma once\n", "#pragma once\n// Template v2: a new first comment.\n")
    edit(new_templates / "_shared/README.md.jinja", "## Build and test", "## Build and test (v2)")

    result = update(str(op))
    assert result.exit_code == 0, result.output
    assert "merged    muladd/csrc/muladd.h" in result.output
    assert "updated   README.md" in result.output
    text = header.read_text()
    assert "my edit" in text and "// Template v2: a new first comment." in text
    assert "## Build and test (v2)" in (op / "README.md").read_text()
    assert (op / "NOTES.md").read_text() == "my own file\n"
    # The ancestor now is the v2 output, so a second update is a no-op that keeps the edit.
    assert "// Template v2" in (op / ".kernelgen/base/muladd/csrc/muladd.h").read_text()
    again = update(str(op))
    assert again.exit_code == 0 and "is up to date" in again.output
    assert "my edit" in header.read_text()


def test_conflicting_edits_get_markers_and_exit_1(op, new_templates):
    header = op / "muladd/csrc/muladd.h"
    edit(header, *USER_EDIT)
    edit(new_templates / "elementwise" / HEADER, "  return {{ e.cpp }};", "  return ({{ e.cpp }});  // v2")
    result = update(str(op))
    assert result.exit_code == 1
    assert "conflict  muladd/csrc/muladd.h" in result.output
    assert "muladd/csrc/muladd.h" in result.output.splitlines()[-1]
    text = header.read_text()
    assert "<<<<<<< your edits" in text and ">>>>>>> kernelgen templates now" in text
    assert "my edit" in text and "(a * b + c);  // v2" in text


def test_dry_run_shows_diffs_and_writes_nothing(op, new_templates):
    edit(new_templates / "_shared/README.md.jinja", "## Build and test", "## Build and test (v2)")
    before = (op / "README.md").read_text()
    result = update(str(op), "--dry-run")
    assert result.exit_code == 0
    assert "updated   README.md" in result.output and "+## Build and test (v2)" in result.output
    assert (op / "README.md").read_text() == before


def test_untouched_op_takes_template_changes_and_removals(op, new_templates):
    (new_templates / "elementwise/benchmarks/harness.py.jinja").unlink()
    result = update(str(op))
    assert result.exit_code == 0, result.output
    assert "removed   benchmarks/harness.py" in result.output
    assert not (op / "benchmarks/harness.py").exists()


def test_edited_file_the_templates_dropped_is_kept_and_reported(op, new_templates):
    # A template release that replaces a file (as v2 split <op>_cuda.cu in two) must not lose a
    # user's tuning in the old file silently: it stays, and the user is told it is no longer built.
    harness = op / "benchmarks/harness.py"
    harness.write_text(harness.read_text() + "# my tuning\n")
    (new_templates / "elementwise/benchmarks/harness.py.jinja").unlink()
    result = CliRunner().invoke(main, ["update", str(op)], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    assert "orphaned  benchmarks/harness.py" in result.stdout
    assert "warning: 1 file(s) you edited are no longer built: benchmarks/harness.py" in result.stderr
    assert harness.read_text().endswith("# my tuning\n")
    assert "benchmarks/harness.py" not in {str(p.relative_to(op / ".kernelgen/base")) for p in (op / ".kernelgen/base").rglob("*")}


def test_user_deleted_file_is_not_resurrected(op, new_templates):
    (op / "README.md").unlink()
    edit(new_templates / "_shared/README.md.jinja", "## Build and test", "## Build and test (v2)")
    result = update(str(op))
    assert result.exit_code == 0
    assert "skipped   README.md" in result.output and not (op / "README.md").exists()


def test_not_an_op_and_missing_base(tmp_path, op):
    result = CliRunner().invoke(main, ["update", str(tmp_path)])
    assert result.exit_code == 1 and "not found: is this a directory generated by kernelgen?" in result.output
    shutil.rmtree(op / ".kernelgen")
    result = CliRunner().invoke(main, ["update", str(op)])
    assert result.exit_code == 1 and "has no .kernelgen/base" in result.output
