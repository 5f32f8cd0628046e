"""Tests of myteam::softmax (CUDA C++ backend, rowwise): myteam_ops's rowwise suite
(myteam_ops/testing/rowwise.py) run on this op, on CPU and CUDA, for every dtype it supports.

Run: pytest -q tests/test_softmax.py   (add -m "not large" to skip the >2**31-element CUDA test)
CUDA tests skip, with the reason, when no GPU is visible or softmax has no CUDA implementation here.
"""

from __future__ import annotations

import torch

import myteam_ops
from myteam_ops.ops.softmax import reference
from myteam_ops.testing.rowwise import OpUnderTest, RowwiseSuite


def error_bound(_m, x):
    """The bound on the rounding error of exp(x - max(x)) / sum(exp(x - max(x))), in units of _m.u,
    element by element: one line per step of the expression (kernelgen writes it from the
    expression; testing/error_model.py of the package says what each term means)."""
    _r0, _q0 = _m.max_of_row(x, None)  # max(x)
    _t0 = x - _r0  # x - _r0
    _e0 = _q0 + _m.one_rounding(_t0)
    _t1 = torch.exp(_t0)  # exp(x - _r0)
    _e1 = _t1 * torch.exp(_e0 * _m.u) * _e0 + _m.function_error('exp', _t0, _t1)
    _r1, _q1 = _m.sum_of_row(_t1, _e1)  # sum(exp(x - max(x)))
    _t2 = x - _r0  # x - _r0
    _e2 = _q0 + _m.one_rounding(_t2)
    _t3 = torch.exp(_t2)  # exp(x - _r0)
    _e3 = _t3 * torch.exp(_e2 * _m.u) * _e2 + _m.function_error('exp', _t2, _t3)
    _t4 = _t3 / _r1  # exp(x - _r0) / _r1
    _e4 = _e3 / _r1.abs() + (_t4 / _r1).abs() * _q1 + _m.division_error(_t4)
    return _e4


def grad_error_bound(_m, _grad, x):
    """The bounds on the rounding errors of the gradients of exp(x - max(x)) / sum(exp(x - max(x))), in units of
    _m.u: one per input (per element) and one per weight (per column, summed over the rows). One
    line per step of each derivative (kernelgen writes them from the expression;
    testing/error_model.py of the package says what each term means)."""
    _r0, _q0 = _m.max_of_row(x, None)  # max(x)
    _t0 = x - _r0  # x - _r0
    _e0 = _q0 + _m.one_rounding(_t0)
    _t1 = torch.exp(_t0)  # exp(x - _r0)
    _e1 = _t1 * torch.exp(_e0 * _m.u) * _e0 + _m.function_error('exp', _t0, _t1)
    _r1, _q1 = _m.sum_of_row(_t1, _e1)  # sum(exp(x - max(x)))
    _t2 = _grad * _t1  # _grad * exp(x - _r0)
    _e2 = _grad.abs() * _e1 + _m.one_rounding(_t2)
    _r2, _q2 = _m.sum_of_row(_t2, _e2)  # sum(_grad * exp(x - max(x)))
    _t3 = 1.0 / _r1  # 1.0 / _r1
    _e3 = (_t3 / _r1).abs() * _q1 + _m.division_error(_t3)
    _t4 = _t1 * _t3  # exp(x - _r0) * (1.0 / _r1)
    _e4 = _t3.abs() * _e1 + _t1.abs() * _e3 + _m.product_of_errors(_e1, _e3) + _m.one_rounding(_t4)
    _t5 = _grad * _t4  # _grad * (exp(x - _r0) * (1.0 / _r1))
    _e5 = _grad.abs() * _e4 + _m.one_rounding(_t5)
    _t6 = _r1 ** 2.0  # _r1 ** 2.0
    _e6 = (2.0 * _r1).abs() * _q1 + _m.product_of_errors(_q1, _q1) + _m.power_error(_r1, 2.0, _t6)
    _t7 = _r2 / _t6  # _r2 / _r1 ** 2.0
    _e7 = _q2 / _t6.abs() + (_t7 / _t6).abs() * _e6 + _m.division_error(_t7)
    _t8 = _t7 * _t1  # _r2 / _r1 ** 2.0 * exp(x - _r0)
    _e8 = _t1.abs() * _e7 + _t7.abs() * _e1 + _m.product_of_errors(_e7, _e1) + _m.one_rounding(_t8)
    _t9 = _t5 - _t8  # _grad * (exp(x - _r0) * (1.0 / _r1)) - _r2 / _r1 ** 2.0 * exp(x - _r0)
    _e9 = _e5 + _e8 + _m.one_rounding(_t9)
    return (_e9,)


class TestSoftmax(RowwiseSuite):
    """Every test of the rowwise suite, run on softmax. Cases of your own go here as methods
    named test_* (self.op, self.assert_matches and the suite's makers of arguments are at hand)."""

    op = OpUnderTest(
        name="softmax",
        backend="cuda",
        call=myteam_ops.softmax,
        overload=torch.ops.myteam.softmax.default,
        reference=reference,
        error_bound=error_bound,
        dtypes=(torch.float32, torch.float64, torch.float16, torch.bfloat16),
        inputs=("x",),
        positive_domain=True,
        backward=torch.ops.myteam.softmax_backward.default,
        grad_error_bound=grad_error_bound,
    )
