"""The interactive prompts of `kernelgen new` / `kernelgen add`, on a real terminal (a pty, through
pexpect): each answer is checked when it is given, and a bad one is asked again with the error and,
for a near miss, a "did you mean"; the answers before it are kept."""

from __future__ import annotations

import os
import re
import sys

import pexpect
import yaml


def spawn(*args: str, cwd: str) -> pexpect.spawn:
    env = {**os.environ, "NO_COLOR": "1", "COLUMNS": "200"}
    return pexpect.spawn(sys.executable, ["-m", "kernelgen", *args], cwd=cwd, env=env, encoding="utf-8",
                         timeout=30, dimensions=(50, 200))


def test_a_typo_at_the_expression_prompt_is_asked_again(tmp_path):
    child = spawn("new", "fancy-op", "-o", str(tmp_path), cwd=str(tmp_path))
    child.expect_exact("Kind (elementwise/rowwise/matmul) [elementwise]: ")
    child.sendline("")
    child.expect_exact("Input tensors (comma-separated) [x]: ")
    child.sendline("x,y")
    child.expect_exact("Expression [x + y]: ")
    child.sendline("x * sigmod(y)")
    # The error and the suggestion come at once, and the same question again (not the next one).
    index = child.expect_exact([
        "Error: --expr: unknown function 'sigmod' at column 5; did you mean 'sigmoid'?",
        "Dtypes", pexpect.EOF,
    ])
    assert index == 0, child.before
    child.expect_exact("Expression [x + y]: ")
    child.sendline("x * sigmoid(y)")
    child.expect_exact("Dtypes [float32,float64,float16,bfloat16]: ")
    child.sendline("fp32,bf16")
    child.expect_exact("CUDA arch list [8.0;9.0+PTX]: ")
    child.sendline("9.0")
    child.expect(r"created .*fancy-op: fancy_op::fancy_op \(elementwise\)")
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0, child.before
    answers = yaml.safe_load((tmp_path / "fancy-op" / ".copier-answers.yml").read_text())
    # Every answer, those before the typo included, is in the package.
    assert answers["ops"] == [{"name": "fancy_op", "kind": "elementwise", "dtypes": ["float32", "bfloat16"],
                               "inputs": ["x", "y"], "expr": "x * sigmoid(y)"}]
    assert answers["arch_list"] == "9.0"
    assert (tmp_path / "fancy-op" / "fancy_op" / "ops" / "fancy_op.py").is_file()


def test_bad_kind_inputs_and_dtypes_are_asked_again(tmp_path):
    child = spawn("new", "-o", str(tmp_path), cwd=str(tmp_path))
    child.expect_exact("Op name: ")
    child.sendline("for")
    child.expect_exact("Error: the op name 'for' is a C++ or Python keyword")
    child.expect_exact("Op name: ")
    child.sendline("rms")
    child.expect_exact("Kind (elementwise/rowwise/matmul) [elementwise]: ")
    child.sendline("rowwize")
    child.expect_exact("Error: --kind: unknown kind 'rowwize'; did you mean 'rowwise'?")
    child.expect_exact("Kind (elementwise/rowwise/matmul) [elementwise]: ")
    child.sendline("rowwise")
    child.expect_exact("Input tensors (comma-separated) [x]: ")
    child.sendline("x,x")
    child.expect_exact("Error: --inputs: input 'x' is declared twice")
    child.expect_exact("Input tensors (comma-separated) [x]: ")
    child.sendline("x")
    child.expect_exact("1-D weights (comma-separated, or none) []: ")
    child.sendline("w")
    child.expect_exact("Expression (with sum, mean, max, min over the row)")
    child.sendline("x * rsqrt(mean(x * x) + 1e-6) * ww")
    child.expect_exact("Error: --expr: unknown name 'ww' at column 33; did you mean 'w'?")
    child.sendline("x * rsqrt(mean(x * x) + 1e-6) * w")
    child.expect_exact("Dtypes [float32,float64,float16,bfloat16]: ")
    child.sendline("flaot32")
    child.expect_exact("Error: --dtypes: unsupported dtype 'flaot32'; did you mean 'float32'?")
    child.expect_exact("Dtypes [float32,float64,float16,bfloat16]: ")
    child.sendline("float32")
    child.expect_exact("CUDA arch list [8.0;9.0+PTX]: ")
    child.sendline("9.0+")
    child.expect_exact("Error: --arch-list: bad --arch-list entry '9.0+'")
    child.expect_exact("CUDA arch list [8.0;9.0+PTX]: ")
    child.sendline("")
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0, child.before
    answers = yaml.safe_load((tmp_path / "rms" / ".copier-answers.yml").read_text())
    assert answers["ops"] == [{"name": "rms", "kind": "rowwise", "dtypes": ["float32"], "inputs": ["x"],
                               "weights": ["w"], "expr": "x * rsqrt(mean(x * x) + 1e-06) * w"}]
    assert answers["arch_list"] == "8.0;9.0+PTX"


def test_a_bad_option_fails_before_the_first_question(tmp_path):
    # An option given on the command line is not an answer to re-ask: it fails at once, with nothing asked.
    child = spawn("new", "fancy-op", "--dtypes", "flaot32", "-o", str(tmp_path), cwd=str(tmp_path))
    child.expect(pexpect.EOF)
    child.close()
    output = child.before
    assert child.exitstatus == 2
    assert "Error: --dtypes: unsupported dtype 'flaot32'; did you mean 'float32'?" in output
    assert not re.search(r"Kind \(|Expression", output) and list(tmp_path.iterdir()) == []
