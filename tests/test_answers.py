"""Answers files and destinations from a hostile checkout: one line and a non-zero exit, never a traceback."""

from __future__ import annotations

import os
import threading

import pytest
from click.testing import CliRunner

from kernelgen.cli import main

GOOD = """\
name: pkg
namespace: pkg
arch_list: '9.0'
ops:
- name: pkg
  kind: elementwise
  dtypes: [float32]
  inputs: [x]
  expr: x * 2
"""


def new_from(tmp_path, text: str | bytes):
    answers = tmp_path / "answers.yml"
    if isinstance(text, bytes):
        answers.write_bytes(text)
    else:
        answers.write_text(text)
    return CliRunner().invoke(main, ["new", "--answers", str(answers), "-o", str(tmp_path / "out")])


def one_line_error(result) -> str:
    assert result.exit_code in (1, 2), result.output
    assert "Traceback" not in result.output
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(result.exception)
    errors = [line for line in result.output.splitlines() if line.startswith("Error:")]
    assert len(errors) == 1, result.output
    return errors[0]


def test_good_answers_file_works(tmp_path):
    result = new_from(tmp_path, GOOD)
    assert result.exit_code == 0, result.output


@pytest.mark.parametrize("old, new, message", [
    ("arch_list: '9.0'", "arch_list: 9.0", "'arch_list' must be a string, not float"),
    ("name: pkg", "name: 2024", "'name' must be a string, not int"),
    ("  dtypes: [float32]", "  dtypes: 5", "'dtypes' must be a list of strings, not int"),
    ("  inputs: [x]", "  inputs: [[x]]", "'inputs' of ops[0] must be a scalar or a list of scalars"),
    ("  expr: x * 2", "  expr: [x]", "'expr' must be a string, not list"),
    ("namespace: pkg", "namespace: true", "'namespace' must be a string, not bool"),
    ("ops:\n- name: pkg", "ops:\n- 7\n- name: pkg", "ops[0] must be a mapping, not int"),
    ("  kind: elementwise", "  kind: sparse_magic", "unknown kind 'sparse_magic'"),
])
def test_wrong_types_are_one_line(tmp_path, old, new, message):
    assert old in GOOD
    assert message in one_line_error(new_from(tmp_path, GOOD.replace(old, new, 1)))
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("content, message", [
    (b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR", "not UTF-8 text"),
    (b"name: pkg\x00\n", "NUL byte"),
    (b"- just\n- a list\n", "not a kernelgen answers file"),
    (b"name: [unclosed", "not valid YAML"),
    (b"a: &a [*a, *a]\n" * 1, "(line 1) uses the YAML alias *a"),
])
def test_binary_and_odd_files(tmp_path, content, message):
    assert message in one_line_error(new_from(tmp_path, content))


def test_huge_answers_file_is_refused_without_reading_it(tmp_path):
    assert "the limit is" in one_line_error(new_from(tmp_path, b"name: pkg\n" + b"#" * (1 << 20)))


def test_dev_zero_and_directories_are_not_regular_files(tmp_path):
    for path in ("/dev/zero", str(tmp_path)):
        result = CliRunner().invoke(main, ["new", "--answers", path, "-o", str(tmp_path / "out")])
        line = one_line_error(result)
        assert "not a regular file" in line or "Directory" in line or "is a directory" in line.lower(), line


def test_fifo_does_not_hang(tmp_path):
    fifo = tmp_path / "answers.fifo"
    os.mkfifo(fifo)
    outcome = {}

    def run():
        outcome["result"] = CliRunner().invoke(main, ["new", "--answers", str(fifo), "-o", str(tmp_path / "out")])

    worker = threading.Thread(target=run, daemon=True)
    worker.start()
    worker.join(timeout=30)
    assert not worker.is_alive(), "kernelgen hung reading a FIFO"
    assert "not a regular file" in one_line_error(outcome["result"])


def test_output_under_an_unknown_user(tmp_path):
    result = CliRunner().invoke(main, ["new", "op", "--inputs", "x", "--expr", "x", "--defaults",
                                       "-o", "~no-such-user-kernelgen/x"])
    assert "cannot use output directory" in one_line_error(result)


def test_answers_combined_with_op_options_is_a_usage_error(tmp_path):
    (tmp_path / "a.yml").write_text(GOOD)
    result = CliRunner().invoke(main, ["new", "--answers", str(tmp_path / "a.yml"), "--expr", "x", "-o", str(tmp_path)])
    assert result.exit_code == 2 and "--answers regenerates a whole package" in result.output


@pytest.mark.parametrize("option", ["--dtypes", "--arch-list", "--namespace", "--inputs", "--expr"])
def test_empty_option_values_are_errors_not_defaults(tmp_path, option):
    argv = ["new", "op", "--inputs", "x", "--expr", "x", "--defaults", "-o", str(tmp_path)]
    result = CliRunner().invoke(main, [*argv, option, ""])
    assert result.exit_code == 2, result.output
    assert option in one_line_error(result)
    assert list(tmp_path.iterdir()) == []
