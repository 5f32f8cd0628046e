"""No user text reaches a generated file except re-printed from what kernelgen parsed.

Every payload goes through every option of `new`, through an answers file, and through a
hand-edited answers file followed by `kernelgen update`. For each one, either kernelgen refuses it
(non-zero exit, no traceback, nothing written), or the package it writes is byte for byte the
package that the recorded (canonical) answers produce, and every generated .py parses. The second
half is what makes injection impossible: the files depend only on the canonical values.
"""

from __future__ import annotations

import ast
import random
import shutil
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner
from conftest import tree

from kernelgen.cli import main

PAYLOADS = [
    'x  # """; import os; os.system("id > /tmp/p"); """',
    "x  # '''; import os; '''", "x # \\N{BULLET}", "x # \\x41 \"", 'x"""', "x'''", "x\\", "x \\\n",
    "x */ int y; /*", "x // comment", "x {{ 7*7 }}", "{{ x }}", "x {% raw %}", "{%- if 1 %}x{% endif %}",
    "x\nimport os", "x\r\nimport os", "x\rimport os", "x\u2028y", "x\u2029y", "x\x0b", "x\x0c", "x\x85y", "x\x00",
    "x; import os", "__import__('os').system('id')", "x if x else x", "lambda: x", "`x`", "$(id)", "x --",
    "../x", "~x", "x\t", " x ", "\uff58", "\u096f", "x)(", "x\udcff", "x" * 3000, "(" * 200 + "x" + ")" * 200,
    "x * 1e400", "x * (9007199254740992 * 9007199254740992)", "x * " + "*".join(["99999999999"] * 60),
]
_rng = random.Random(20261123)
_ALPHABET = "x()+-*/ .,e0123456789#'\"\\{}%\n\r\t\x00$`;:[]<>=!&|^~@abcdefsigmoidexplog"
PAYLOADS += ["".join(_rng.choice(_ALPHABET) for _ in range(_rng.randint(1, 30))) for _ in range(60)]

OPTIONS = ["name", "--op", "--inputs", "--expr", "--dtypes", "--arch-list", "--namespace"]


def _argv(option: str, payload: str, out: Path) -> list[str]:
    values = {"name": "pkg", "--inputs": "x", "--expr": "x * 2", "--dtypes": "fp32", "--arch-list": "9.0"}
    if option in values:
        values[option] = payload
    argv = ["new", values.pop("name"), "--defaults", "-o", str(out)]
    for flag, value in values.items():
        argv += [flag, value]
    if option in ("--op", "--namespace"):
        argv += [option, payload]
    return argv


def _check_refusal(result, out: Path) -> None:
    assert result.exit_code in (1, 2), result.output
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(result.exception)
    assert "Traceback" not in result.output
    errors = [line for line in result.output.splitlines() if line.startswith("Error:")]
    assert len(errors) == 1, result.output
    assert not out.exists() or list(out.iterdir()) == []


def _check_package(root: Path, tmp: Path) -> None:
    files = tree(root)
    for rel, content in files.items():
        if rel.endswith(".py"):
            ast.parse(content.decode("utf-8"), rel)
        if not rel.endswith(".gz"):
            text = content.decode("utf-8")
            assert "\x00" not in text and "\u2028" not in text and "\r" not in text, rel
    # Regenerate from what was recorded: the same bytes means no file holds unrecorded user text.
    again = tmp / "again"
    result = CliRunner().invoke(main, ["new", "--answers", str(root / ".copier-answers.yml"), "-o", str(again)])
    assert result.exit_code == 0, result.output
    assert tree(again / root.name) == files
    shutil.rmtree(again)


@pytest.mark.parametrize("option", OPTIONS)
def test_every_payload_through_every_option(tmp_path, option):
    for index, payload in enumerate(PAYLOADS):
        out = tmp_path / f"out{index}"
        result = CliRunner().invoke(main, _argv(option, payload, out))
        if result.exit_code == 0:
            (root,) = list(out.iterdir())
            _check_package(root, tmp_path)
        else:
            _check_refusal(result, out)


@pytest.mark.parametrize("field", ["name", "namespace", "arch_list", "ops.expr", "ops.inputs", "ops.name", "ops.dtypes"])
def test_every_payload_through_an_answers_file(tmp_path, field):
    base = {"name": "pkg", "namespace": "pkg", "arch_list": "9.0",
            "ops": [{"name": "pkg", "kind": "elementwise", "dtypes": ["float32"], "inputs": ["x"], "expr": "x * 2"}]}
    for index, payload in enumerate(PAYLOADS[:40]):
        data = yaml.safe_load(yaml.safe_dump(base))
        if field.startswith("ops."):
            key = field[4:]
            data["ops"][0][key] = [payload] if key in ("inputs", "dtypes") else payload
        else:
            data[field] = payload
        answers = tmp_path / f"answers{index}.yml"
        answers.write_text(yaml.safe_dump(data, allow_unicode=True), encoding="utf-8", errors="surrogateescape")
        out = tmp_path / f"out{index}"
        result = CliRunner().invoke(main, ["new", "--answers", str(answers), "-o", str(out)])
        if result.exit_code == 0:
            (root,) = list(out.iterdir())
            _check_package(root, tmp_path)
        else:
            _check_refusal(result, out)


def test_hand_edited_answers_then_update(tmp_path):
    assert CliRunner().invoke(main, ["new", "pkg", "--inputs", "x", "--expr", "x * 2", "--dtypes", "fp32",
                                     "--defaults", "-o", str(tmp_path)]).exit_code == 0
    root = tmp_path / "pkg"
    answers = root / ".copier-answers.yml"
    pristine = answers.read_text()
    for payload in PAYLOADS[:30]:
        before = tree(root)
        data = yaml.safe_load(pristine)
        data["ops"][0]["expr"] = payload
        answers.write_text(yaml.safe_dump(data, allow_unicode=True), encoding="utf-8", errors="surrogateescape")
        edited = tree(root)
        result = CliRunner().invoke(main, ["update", str(root)])
        if result.exit_code == 0:
            for rel, content in tree(root).items():
                if rel.endswith(".py"):
                    ast.parse(content.decode("utf-8"), rel)
            recorded = yaml.safe_load(answers.read_text())["ops"][0]["expr"]
            assert "#" not in recorded and "\n" not in recorded and '"' not in recorded
        else:
            assert result.exit_code in (1, 2) and "Traceback" not in result.output, result.output
            assert tree(root) == edited  # nothing written
        answers.write_text(pristine)
        assert CliRunner().invoke(main, ["update", str(root)]).exit_code == 0
        assert {k: v for k, v in tree(root).items()} .keys() == before.keys()
