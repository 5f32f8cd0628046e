"""Tests of myteam::silu_mul (CUDA C++ backend, elementwise): myteam_ops's elementwise suite
(myteam_ops/testing/elementwise.py) run on this op, on CPU and CUDA, for every dtype it supports.

Run: pytest -q tests/test_silu_mul.py   (add -m "not large" to skip the >2**31-element CUDA test)
CUDA tests skip, with the reason, when no GPU is visible or silu_mul has no CUDA implementation here.
"""

from __future__ import annotations

import torch

import myteam_ops
from myteam_ops.ops.silu_mul import reference
from myteam_ops.testing.elementwise import ElementwiseSuite, OpUnderTest


def error_bound(_m, x, y):
    """The bound on the rounding error of x * sigmoid(x) * y, in units of _m.u,
    element by element: one line per step of the expression (kernelgen writes it from the
    expression; testing/error_model.py of the package says what each term means)."""
    _t0 = torch.sigmoid(x)  # sigmoid(x)
    _e0 = _m.function_error('sigmoid', x, _t0)
    _t1 = x * _t0  # x * sigmoid(x)
    _e1 = x.abs() * _e0 + _m.one_rounding(_t1)
    _t2 = _t1 * y  # x * sigmoid(x) * y
    _e2 = y.abs() * _e1 + _m.one_rounding(_t2)
    return _e2


class TestSiluMul(ElementwiseSuite):
    """Every test of the elementwise suite, run on silu_mul. Cases of your own go here as methods
    named test_* (self.op, self.assert_matches and the suite's makers of arguments are at hand)."""

    op = OpUnderTest(
        name="silu_mul",
        backend="cuda",
        call=myteam_ops.silu_mul,
        overload=torch.ops.myteam.silu_mul.default,
        reference=reference,
        error_bound=error_bound,
        dtypes=(torch.float32, torch.float64, torch.float16, torch.bfloat16),
        inputs=("x", "y"),
    )
