"""Tests of myteam::gelu (CUDA C++ backend, elementwise): myteam_ops's elementwise suite
(myteam_ops/testing/elementwise.py) run on this op, on CPU and CUDA, for every dtype it supports.

Run: pytest -q tests/test_gelu.py   (add -m "not large" to skip the >2**31-element CUDA test)
CUDA tests skip, with the reason, when no GPU is visible or gelu has no CUDA implementation here.
"""

from __future__ import annotations

import torch

import myteam_ops
from myteam_ops.ops.gelu import reference
from myteam_ops.testing.elementwise import ElementwiseSuite, OpUnderTest


def error_bound(_m, x):
    """The bound on the rounding error of x * sigmoid(1.702 * x), in units of _m.u,
    element by element: one line per step of the expression (kernelgen writes it from the
    expression; testing/error_model.py of the package says what each term means)."""
    _t0 = 1.702 * x  # 1.702 * x
    _e0 = x.abs() * _m.literal_rounding(1.702) + _m.one_rounding(_t0)
    _t1 = torch.sigmoid(_t0)  # sigmoid(1.702 * x)
    _e1 = (_t1 * (1.0 - _t1) + 0.0963 * _e0 * _m.u).clamp(max=0.25) * _e0 + _m.function_error('sigmoid', _t0, _t1)
    _t2 = x * _t1  # x * sigmoid(1.702 * x)
    _e2 = x.abs() * _e1 + _m.one_rounding(_t2)
    return _e2


def grad_error_bound(_m, _grad, x):
    """The bounds on the rounding errors of the gradients of x * sigmoid(1.702 * x), in units of
    _m.u, element by element, one per input: one line per step of each derivative (kernelgen writes
    them from the expression; testing/error_model.py of the package says what each term means)."""
    _t0 = 1.702 * x  # 1.702 * x
    _e0 = x.abs() * _m.literal_rounding(1.702) + _m.one_rounding(_t0)
    _t1 = torch.sigmoid(_t0)  # sigmoid(1.702 * x)
    _e1 = (_t1 * (1.0 - _t1) + 0.0963 * _e0 * _m.u).clamp(max=0.25) * _e0 + _m.function_error('sigmoid', _t0, _t1)
    _t2 = 1.0 - _t1  # 1.0 - sigmoid(1.702 * x)
    _e2 = _e1 + _m.one_rounding(_t2)
    _t3 = _t1 * _t2  # sigmoid(1.702 * x) * (1.0 - sigmoid(1.702 * x))
    _e3 = _t2.abs() * _e1 + _t1.abs() * _e2 + _m.product_of_errors(_e1, _e2) + _m.one_rounding(_t3)
    _t4 = x * _t3  # x * (sigmoid(1.702 * x) * (1.0 - sigmoid(1.702 * x)))
    _e4 = x.abs() * _e3 + _m.one_rounding(_t4)
    _t5 = 1.702 * _t4  # 1.702 * (x * (sigmoid(1.702 * x) * (1.0 - sigmoid(1.702 * x))))
    _e5 = _t4.abs() * _m.literal_rounding(1.702) + 1.702 * _e4 + _m.product_of_errors(_m.literal_rounding(1.702), _e4) + _m.one_rounding(_t5)
    _t6 = _t1 + _t5  # sigmoid(1.702 * x) + 1.702 * (x * (sigmoid(1.702 * x) * (1.0 - sigmoi...
    _e6 = _e1 + _e5 + _m.one_rounding(_t6)
    _t7 = _grad * _t6  # _grad * (sigmoid(1.702 * x) + 1.702 * (x * (sigmoid(1.702 * x) * (1.0...
    _e7 = _grad.abs() * _e6 + _m.one_rounding(_t7)
    return (_e7,)


class TestGelu(ElementwiseSuite):
    """Every test of the elementwise suite, run on gelu. Cases of your own go here as methods
    named test_* (self.op, self.assert_matches and the suite's makers of arguments are at hand)."""

    op = OpUnderTest(
        name="gelu",
        backend="cuda",
        call=myteam_ops.gelu,
        overload=torch.ops.myteam.gelu.default,
        reference=reference,
        error_bound=error_bound,
        dtypes=(torch.float32, torch.float64, torch.float16, torch.bfloat16),
        inputs=("x",),
        backward=torch.ops.myteam.gelu_backward.default,
        grad_error_bound=grad_error_bound,
    )
