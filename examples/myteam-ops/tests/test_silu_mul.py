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


def grad_error_bound(_m, _grad, x, y):
    """The bounds on the rounding errors of the gradients of x * sigmoid(x) * y, in units of
    _m.u, element by element, one per input: one line per step of each derivative (kernelgen writes
    them from the expression; testing/error_model.py of the package says what each term means)."""
    _t0 = torch.sigmoid(x)  # sigmoid(x)
    _e0 = _m.function_error('sigmoid', x, _t0)
    _t1 = 1.0 - _t0  # 1.0 - sigmoid(x)
    _e1 = _e0 + _m.one_rounding(_t1)
    _t2 = _t0 * _t1  # sigmoid(x) * (1.0 - sigmoid(x))
    _e2 = _t1.abs() * _e0 + _t0.abs() * _e1 + _m.product_of_errors(_e0, _e1) + _m.one_rounding(_t2)
    _t3 = x * _t2  # x * (sigmoid(x) * (1.0 - sigmoid(x)))
    _e3 = x.abs() * _e2 + _m.one_rounding(_t3)
    _t4 = _t0 + _t3  # sigmoid(x) + x * (sigmoid(x) * (1.0 - sigmoid(x)))
    _e4 = _e0 + _e3 + _m.one_rounding(_t4)
    _t5 = _t4 * y  # (sigmoid(x) + x * (sigmoid(x) * (1.0 - sigmoid(x)))) * y
    _e5 = y.abs() * _e4 + _m.one_rounding(_t5)
    _t6 = _grad * _t5  # _grad * ((sigmoid(x) + x * (sigmoid(x) * (1.0 - sigmoid(x)))) * y)
    _e6 = _grad.abs() * _e5 + _m.one_rounding(_t6)
    _t7 = x * _t0  # x * sigmoid(x)
    _e7 = x.abs() * _e0 + _m.one_rounding(_t7)
    _t8 = _grad * _t7  # _grad * (x * sigmoid(x))
    _e8 = _grad.abs() * _e7 + _m.one_rounding(_t8)
    return (_e6, _e8)


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
        backward=torch.ops.myteam.silu_mul_backward.default,
        grad_error_bound=grad_error_bound,
    )
