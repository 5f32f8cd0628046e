"""Tests of myteam::muladd_tl (Triton backend, elementwise): myteam_ops's elementwise suite
(myteam_ops/testing/elementwise.py) run on this op, on CPU and CUDA, for every dtype it supports.

Run: pytest -q tests/test_muladd_tl.py   (add -m "not large" to skip the >2**31-element CUDA test)
CUDA tests skip, with the reason, when no GPU is visible or muladd_tl has no CUDA implementation here.
"""

from __future__ import annotations

import torch

import myteam_ops
from myteam_ops.ops.muladd_tl import reference
from myteam_ops.testing.elementwise import ElementwiseSuite, OpUnderTest
from myteam_ops.testing.triton_eager import TritonEagerChecks


def error_bound(_m, a, b, c):
    """The bound on the rounding error of a * b + c, in units of _m.u,
    element by element: one line per step of the expression (kernelgen writes it from the
    expression; testing/error_model.py of the package says what each term means)."""
    _t0 = a * b  # a * b
    _e0 = _m.one_rounding(_t0)
    _t1 = _t0 + c  # a * b + c
    _e1 = _e0 + _m.one_rounding(_t1)
    return _e1


def grad_error_bound(_m, _grad, a, b, c):
    """The bounds on the rounding errors of the gradients of a * b + c, in units of
    _m.u, element by element, one per input: one line per step of each derivative (kernelgen writes
    them from the expression; testing/error_model.py of the package says what each term means)."""
    _t0 = _grad * b  # _grad * b
    _e0 = _m.one_rounding(_t0)
    _t1 = _grad * a  # _grad * a
    _e1 = _m.one_rounding(_t1)
    return (_e0, _e1, 0.0)


class TestMuladdTl(TritonEagerChecks, ElementwiseSuite):
    """Every test of the elementwise suite, run on muladd_tl. Cases of your own go here as methods
    named test_* (self.op, self.assert_matches and the suite's makers of arguments are at hand)."""

    op = OpUnderTest(
        name="muladd_tl",
        backend="triton",
        call=myteam_ops.muladd_tl,
        overload=torch.ops.myteam.muladd_tl.default,
        reference=reference,
        error_bound=error_bound,
        dtypes=(torch.float32, torch.float64, torch.float16, torch.bfloat16),
        inputs=("a", "b", "c"),
        backward=torch.ops.myteam.muladd_tl_backward.default,
        grad_error_bound=grad_error_bound,
    )
