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


# ---- issue 30: bounded parsing, and errors that name the file and the field --------------------------


def _alias_bomb(levels: int) -> str:
    """An answers file whose _template_version is 9**levels strings, through nested aliases."""
    lines = ["a0: &a0 [x, x, x, x, x, x, x, x, x]"]
    lines += [f"a{i}: &a{i} [*a{i - 1}, *a{i - 1}, *a{i - 1}, *a{i - 1}, *a{i - 1}, *a{i - 1}, *a{i - 1}, *a{i - 1}, "
              f"*a{i - 1}]" for i in range(1, levels)]
    return "\n".join(lines) + f"\n_template_version: *a{levels - 1}\n" + GOOD


def test_yaml_aliases_are_refused_before_they_expand(tmp_path):
    """Issue 30, item 3: an answers file of a few hundred bytes that expands through aliases (the
    issue's one, 8 levels, made `ops --json` print 312 MB; here 5 levels, 59049 strings)."""
    package = tmp_path / "pkg"
    package.mkdir()
    (package / ".copier-answers.yml").write_text(_alias_bomb(5))
    assert len((package / ".copier-answers.yml").read_bytes()) < 1000
    for argv in (["ops", str(package), "--json"], ["ops", str(package)],
                 ["add", "aa", "--inputs", "x", "--expr", "x", "--defaults", "--package", str(package)]):
        result = CliRunner().invoke(main, argv)
        line = one_line_error(result)
        assert len(result.output) < 1000, len(result.output)
        assert "(line 2) uses the YAML alias *a0, which kernelgen answers files never hold" in line, line


@pytest.mark.parametrize("extra, message", [
    ("name: other\n", "(line 10) has the key 'name' twice (which one counts?); keep one"),
    ("<<: {namespace: other}\n", "(line 10) uses a YAML merge key (<<)"),
    ("extra: [[1, 2]]\n", ": 'extra' must be a scalar or a list of scalars, not a list of lists or a mapping"),
    ("extra: {a: 1}\n", ": 'extra' must be a scalar or a list of scalars, not a list of lists or a mapping"),
])
def test_duplicate_keys_merge_keys_and_nested_fields_are_refused(tmp_path, extra, message):
    """Issue 30, item 5: a duplicate `name:` silently won (and renamed the package)."""
    line = one_line_error(new_from(tmp_path, GOOD + extra))
    assert f"answers file {tmp_path / 'answers.yml'}" in line and message in line, line
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("old, new, field, message", [
    ("namespace: pkg", "namespace: aten", "namespace", "'aten' is a namespace PyTorch owns"),
    ("name: pkg", "name: _pkg", "name", "the package name '_pkg' starts or ends with '_'"),
    ("name: pkg\nnamespace: pkg\n", "name: sparse\n", "name (the default namespace)",
     "'sparse' is a namespace PyTorch owns"),
    ("  dtypes: [float32]", "  dtypes: [float32, fp99]", "ops[0].dtypes", "unsupported dtype 'fp99'"),
    ("  expr: x * 2", "  expr: x * import", "ops[0].expr", "is not a valid expression"),
    ("arch_list: '9.0'", "arch_list: '6.0'", "arch_list", "older than 7.5"),
])
def test_a_bad_value_in_an_answers_file_names_the_file_and_the_field(tmp_path, old, new, field, message):
    """Issue 30: a bad value from an answers file was reported against an option nobody gave
    (`--namespace: 'aten' ...`), without naming the file."""
    line = one_line_error(new_from(tmp_path, GOOD.replace(old, new, 1)))
    assert line.startswith(f"Error: {tmp_path / 'answers.yml'}: {field}: "), line
    assert message in line, line
    assert not (tmp_path / "out").exists()


def test_a_namespace_taken_from_the_package_name_names_the_package_name(tmp_path):
    """Issue 30: `kernelgen new sparse --op foo` reported `--namespace`, which was never given."""
    result = CliRunner().invoke(main, ["new", "sparse", "--op", "foo", "--inputs", "x", "--expr", "x", "--defaults",
                                       "-o", str(tmp_path)])
    line = one_line_error(result)
    assert "--namespace:" not in line, line
    assert "the package name 'sparse' would also be the torch.ops namespace" in line, line
    assert list(tmp_path.iterdir()) == []
    ok = CliRunner().invoke(main, ["new", "sparse", "--op", "foo", "--inputs", "x", "--expr", "x", "--namespace", "team",
                                   "--defaults", "-o", str(tmp_path)])
    assert ok.exit_code == 0, ok.output
