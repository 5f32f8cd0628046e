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
    _e2 = 0.5 * (_t1.abs() - _e1 * _m.u).clamp(min=0.0) ** -1.5 * _e1 + _m.function_error('rsqrt', _t1, _t2)
    _t3 = x * _t2  # x * rsqrt(_r0 + 1e-06)
    _e3 = x.abs() * _e2 + _m.one_rounding(_t3)
    _t4 = _t3 * w  # x * rsqrt(_r0 + 1e-06) * w
    _e4 = w.abs() * _e3 + _m.one_rounding(_t4)
    return _e4


def grad_error_bound(_m, _grad, x, w):
    """The bounds on the rounding errors of the gradients of x * rsqrt(mean(x * x) + 1e-06) * w, in units of
    _m.u: one per input (per element) and one per weight (per column, summed over the rows). One
    line per step of each derivative (kernelgen writes them from the expression;
    testing/error_model.py of the package says what each term means)."""
    _t0 = x * x  # x * x
    _e0 = _m.one_rounding(_t0)
    _r0, _q0 = _m.mean_of_row(_t0, _e0)  # mean(x * x)
    _t1 = _grad * w  # _grad * w
    _e1 = _m.one_rounding(_t1)
    _t2 = _t1 * x  # _grad * w * x
    _e2 = x.abs() * _e1 + _m.one_rounding(_t2)
    _r1, _q1 = _m.mean_of_row(_t2, _e2)  # mean(_grad * w * x)
    _t3 = _r0 + 1e-06  # _r0 + 1e-06
    _e3 = _q0 + _m.literal_rounding(1e-06) + _m.one_rounding(_t3)
    _t4 = torch.rsqrt(_t3)  # rsqrt(_r0 + 1e-06)
    _e4 = 0.5 * (_t3.abs() - _e3 * _m.u).clamp(min=0.0) ** -1.5 * _e3 + _m.function_error('rsqrt', _t3, _t4)
    _t5 = _t4 * w  # rsqrt(_r0 + 1e-06) * w
    _e5 = w.abs() * _e4 + _m.one_rounding(_t5)
    _t6 = _grad * _t5  # _grad * (rsqrt(_r0 + 1e-06) * w)
    _e6 = _grad.abs() * _e5 + _m.one_rounding(_t6)
    _t7 = _t4 ** 3.0  # rsqrt(_r0 + 1e-06) ** 3.0
    _e7 = (3.0 * _t4 ** 2.0).abs() * _e4 + _m.power_error(_t4, 3.0, _t7)
    _t8 = _t7 * _r1  # rsqrt(_r0 + 1e-06) ** 3.0 * _r1
    _e8 = _r1.abs() * _e7 + _t7.abs() * _q1 + _m.product_of_errors(_e7, _q1) + _m.one_rounding(_t8)
    _t9 = _t8 * x  # rsqrt(_r0 + 1e-06) ** 3.0 * _r1 * x
    _e9 = x.abs() * _e8 + _m.one_rounding(_t9)
    _t10 = _t6 - _t9  # _grad * (rsqrt(_r0 + 1e-06) * w) - rsqrt(_r0 + 1e-06) ** 3.0 * _r1 * x
    _e10 = _e6 + _e9 + _m.one_rounding(_t10)
    _t11 = x * _t4  # x * rsqrt(_r0 + 1e-06)
    _e11 = x.abs() * _e4 + _m.one_rounding(_t11)
    _t12 = _grad * _t11  # _grad * (x * rsqrt(_r0 + 1e-06))
    _e12 = _grad.abs() * _e11 + _m.one_rounding(_t12)
    return (_e10, _m.sum_of_column(_t12, _e12, x)[1])


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
        backward=torch.ops.rmsnorm.rmsnorm_backward.default,
        grad_error_bound=grad_error_bound,
    )
