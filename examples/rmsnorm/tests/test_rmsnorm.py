"""Tests of rmsnorm::rmsnorm (CUDA C++ backend, rowwise): rmsnorm's rowwise suite
(rmsnorm/testing/rowwise.py) run on this op, on CPU and CUDA, for every dtype it supports.

Run: pytest -q tests/test_rmsnorm.py   (add -m "not large" to skip the >2**31-element CUDA test)
CUDA tests skip, with the reason, when no GPU is visible or rmsnorm has no CUDA implementation here.
"""

from __future__ import annotations

import torch

import rmsnorm
from rmsnorm.ops.rmsnorm import reference
from rmsnorm.testing.rowwise import OpUnderTest, RowwiseSuite


def error_bound(_m, x, w):
    """The bound on the rounding error of x * rsqrt(mean(x * x) + 1e-06) * w, in units of _m.u,
    element by element: one line per step of the expression (kernelgen writes it from the
    expression; testing/error_model.py of the package says what each term means)."""
    _t0 = x * x  # x * x
    _e0 = _m.one_rounding(_t0)
    _r0, _q0 = _m.mean_of_row(_t0, _e0)  # mean(x * x)
    _t1 = _r0 + 1e-06  # _r0 + 1e-06
    _e1 = _q0 + _m.literal_rounding(1e-06) + _m.one_rounding(_t1)
    _t2 = torch.rsqrt(_t1)  # rsqrt(_r0 + 1e-06)
    _e2 = 0.5 * _t2 / _t1.abs() * _e1 + _m.function_error('rsqrt', _t1, _t2)
    _t3 = x * _t2  # x * rsqrt(_r0 + 1e-06)
    _e3 = x.abs() * _e2 + _m.one_rounding(_t3)
    _t4 = _t3 * w  # x * rsqrt(_r0 + 1e-06) * w
    _e4 = w.abs() * _e3 + _m.one_rounding(_t4)
    return _e4


class TestRmsnorm(RowwiseSuite):
    """Every test of the rowwise suite, run on rmsnorm. Cases of your own go here as methods
    named test_* (self.op, self.assert_matches and the suite's makers of arguments are at hand)."""

    op = OpUnderTest(
        name="rmsnorm",
        backend="cuda",
        call=rmsnorm.rmsnorm,
        overload=torch.ops.rmsnorm.rmsnorm.default,
        reference=reference,
        error_bound=error_bound,
        dtypes=(torch.float32, torch.float64, torch.float16, torch.bfloat16),
        inputs=("x",),
        weights=("w",),
        positive_domain=True,
    )
