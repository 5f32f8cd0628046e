"""The generated suites' torch.compile check (testing/suite.py's assert_as_close_as_eager): compile's result
is held to the exact one with eager's largest error as slack, so two correct float32 evaluations of an
ill-conditioned expression do not fail it, and a compiled graph that changes a step still does."""

from __future__ import annotations

import importlib
import sys

import pytest
from click.testing import CliRunner

from kernelgen.cli import main

torch = pytest.importorskip("torch", reason="the generated suites run on torch")


@pytest.fixture(scope="module")
def check(tmp_path_factory):
    pytest.importorskip("triton", reason="a Triton package imports without a build")
    root = tmp_path_factory.mktemp("compile_check")
    result = CliRunner().invoke(main, ["new", "cc-ops", "--op", "twice", "--backend", "triton", "--inputs", "x",
                                       "--expr", "x * 2", "--defaults", "--output", str(root)])
    assert result.exit_code == 0, result.output
    sys.path.insert(0, str(root / "cc-ops"))
    try:
        yield importlib.import_module("cc_ops.testing.suite").assert_as_close_as_eager
    finally:
        sys.path.remove(str(root / "cc-ops"))


def _ill_conditioned():
    # (a + b) - a with a near 1e4: float32 keeps b to within half an ulp of a (5e-4); ((a + b / 2) - a) * 2,
    # the same value computed another way, to within an ulp, elsewhere
    generator = torch.Generator().manual_seed(0)
    a = (torch.rand(1000, generator=generator, dtype=torch.float64) + 1.0) * 1e4
    b = torch.randn(1000, generator=generator, dtype=torch.float64)
    a32, b32 = a.float(), b.float()
    exact = (a32.double() + b32.double()) - a32.double()
    return exact, (a32 + b32) - a32, ((a32 + 0.5 * b32) - a32) * 2


def test_two_correct_evaluations_of_an_ill_conditioned_expression_pass(check):
    exact, eager, compiled = _ill_conditioned()
    with pytest.raises(AssertionError):  # what a fixed tolerance against eager said of them
        torch.testing.assert_close(compiled, eager, rtol=1e-4, atol=1e-5)
    check(compiled, eager, exact, rtol=1e-4, atol=1e-5)


def test_a_changed_step_fails(check):
    generator = torch.Generator().manual_seed(1)
    x = torch.randn(1000, generator=generator, dtype=torch.float64)
    exact = x * x + 0.5 * x
    eager = (x.float() * x.float() + 0.5 * x.float())
    check(eager, eager, exact, rtol=1e-5, atol=1e-6)
    with pytest.raises(AssertionError):
        check(x.float() * x.float(), eager, exact, rtol=1e-5, atol=1e-6)  # a term dropped
    with pytest.raises(AssertionError):
        check(eager * (1 + 1e-3), eager, exact, rtol=1e-5, atol=1e-6)  # off by 0.1%
    with pytest.raises(AssertionError):
        check(torch.full_like(eager, float("nan")), eager, exact, rtol=1e-5, atol=1e-6)

