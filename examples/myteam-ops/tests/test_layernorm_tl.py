"""Tests of myteam::layernorm_tl (Triton backend, rowwise): myteam_ops's rowwise suite
(myteam_ops/testing/rowwise.py) run on this op, on CPU and CUDA, for every dtype it supports.

Run: pytest -q tests/test_layernorm_tl.py   (add -m "not large" to skip the >2**31-element CUDA test)
CUDA tests skip, with the reason, when no GPU is visible or layernorm_tl has no CUDA implementation here.
"""

from __future__ import annotations

import torch

import myteam_ops
from myteam_ops.ops.layernorm_tl import reference
from myteam_ops.testing.rowwise import OpUnderTest, RowwiseSuite
from myteam_ops.testing.triton_eager import TritonEagerChecks


def error_bound(_m, x, w, b):
    """The bound on the rounding error of (x - mean(x)) * rsqrt(mean((x - mean(x)) ** 2..., in units of _m.u,
    element by element: one line per step of the expression (kernelgen writes it from the
    expression; testing/error_model.py of the package says what each term means)."""
    _r0, _q0 = _m.mean_of_row(x, None)  # mean(x)
    _t0 = x - _r0  # x - _r0
    _e0 = _q0 + _m.one_rounding(_t0)
    _t1 = _t0 ** 2.0  # (x - _r0) ** 2.0
    _e1 = (2.0 * _t0).abs() * _e0 + _m.product_of_errors(_e0, _e0) + _m.power_error(_t0, 2.0, _t1)
    _r1, _q1 = _m.mean_of_row(_t1, _e1)  # mean((x - mean(x)) ** 2.0)
    _t2 = x - _r0  # x - _r0
    _e2 = _q0 + _m.one_rounding(_t2)
    _t3 = _r1 + 1e-05  # _r1 + 1e-05
    _e3 = _q1 + _m.literal_rounding(1e-05) + _m.one_rounding(_t3)
    _t4 = torch.rsqrt(_t3)  # rsqrt(_r1 + 1e-05)
    _e4 = 0.5 * (_t3.abs() - _e3 * _m.u).clamp(min=0.0) ** -1.5 * _e3 + _m.function_error('rsqrt', _t3, _t4)
    _t5 = _t2 * _t4  # (x - _r0) * rsqrt(_r1 + 1e-05)
    _e5 = _t4.abs() * _e2 + _t2.abs() * _e4 + _m.product_of_errors(_e2, _e4) + _m.one_rounding(_t5)
    _t6 = _t5 * w  # (x - _r0) * rsqrt(_r1 + 1e-05) * w
    _e6 = w.abs() * _e5 + _m.one_rounding(_t6)
    _t7 = _t6 + b  # (x - _r0) * rsqrt(_r1 + 1e-05) * w + b
    _e7 = _e6 + _m.one_rounding(_t7)
    return _e7


def grad_error_bound(_m, _grad, x, w, b):
    """The bounds on the rounding errors of the gradients of (x - mean(x)) * rsqrt(mean((x - mean(..., in units of
    _m.u: one per input (per element) and one per weight (per column, summed over the rows). One
    line per step of each derivative (kernelgen writes them from the expression;
    testing/error_model.py of the package says what each term means)."""
    _r0, _q0 = _m.mean_of_row(x, None)  # mean(x)
    _t0 = x - _r0  # x - _r0
    _e0 = _q0 + _m.one_rounding(_t0)
    _t1 = _t0 ** 2.0  # (x - _r0) ** 2.0
    _e1 = (2.0 * _t0).abs() * _e0 + _m.product_of_errors(_e0, _e0) + _m.power_error(_t0, 2.0, _t1)
    _r1, _q1 = _m.mean_of_row(_t1, _e1)  # mean((x - mean(x)) ** 2.0)
    _t2 = _grad * w  # _grad * w
    _e2 = _m.one_rounding(_t2)
    _r2, _q2 = _m.mean_of_row(_t2, _e2)  # mean(_grad * w)
    _t3 = _t2 * _t0  # _grad * w * (x - _r0)
    _e3 = _t0.abs() * _e2 + _t2.abs() * _e0 + _m.product_of_errors(_e2, _e0) + _m.one_rounding(_t3)
    _r3, _q3 = _m.mean_of_row(_t3, _e3)  # mean(_grad * w * (x - mean(x)))
    _t4 = _r1 + 1e-05  # _r1 + 1e-05
    _e4 = _q1 + _m.literal_rounding(1e-05) + _m.one_rounding(_t4)
    _t5 = torch.rsqrt(_t4)  # rsqrt(_r1 + 1e-05)
    _e5 = 0.5 * (_t4.abs() - _e4 * _m.u).clamp(min=0.0) ** -1.5 * _e4 + _m.function_error('rsqrt', _t4, _t5)
    _t6 = _t5 * w  # rsqrt(_r1 + 1e-05) * w
    _e6 = w.abs() * _e5 + _m.one_rounding(_t6)
    _t7 = _grad * _t6  # _grad * (rsqrt(_r1 + 1e-05) * w)
    _e7 = _grad.abs() * _e6 + _m.one_rounding(_t7)
    _t8 = _t5 * _r2  # rsqrt(_r1 + 1e-05) * _r2
    _e8 = _r2.abs() * _e5 + _t5.abs() * _q2 + _m.product_of_errors(_e5, _q2) + _m.one_rounding(_t8)
    _t9 = _t7 - _t8  # _grad * (rsqrt(_r1 + 1e-05) * w) - rsqrt(_r1 + 1e-05) * _r2
    _e9 = _e7 + _e8 + _m.one_rounding(_t9)
    _t10 = _t5 ** 3.0  # rsqrt(_r1 + 1e-05) ** 3.0
    _e10 = (3.0 * _t5 ** 2.0).abs() * _e5 + _m.power_error(_t5, 3.0, _t10)
    _t11 = _t10 * _r3  # rsqrt(_r1 + 1e-05) ** 3.0 * _r3
    _e11 = _r3.abs() * _e10 + _t10.abs() * _q3 + _m.product_of_errors(_e10, _q3) + _m.one_rounding(_t11)
    _t12 = _t11 * _t0  # rsqrt(_r1 + 1e-05) ** 3.0 * _r3 * (x - _r0)
    _e12 = _t0.abs() * _e11 + _t11.abs() * _e0 + _m.product_of_errors(_e11, _e0) + _m.one_rounding(_t12)
    _t13 = _t9 - _t12  # _grad * (rsqrt(_r1 + 1e-05) * w) - rsqrt(_r1 + 1e-05) * _r2 - rsqrt(_...
    _e13 = _e9 + _e12 + _m.one_rounding(_t13)
    _t14 = _t0 * _t5  # (x - _r0) * rsqrt(_r1 + 1e-05)
    _e14 = _t5.abs() * _e0 + _t0.abs() * _e5 + _m.product_of_errors(_e0, _e5) + _m.one_rounding(_t14)
    _t15 = _grad * _t14  # _grad * ((x - _r0) * rsqrt(_r1 + 1e-05))
    _e15 = _grad.abs() * _e14 + _m.one_rounding(_t15)
    return (_e13, _m.sum_of_column(_t15, _e15, x)[1], _m.sum_of_column(_grad, None, x)[1])


class TestLayernormTl(TritonEagerChecks, RowwiseSuite):
    """Every test of the rowwise suite, run on layernorm_tl. Cases of your own go here as methods
    named test_* (self.op, self.assert_matches and the suite's makers of arguments are at hand)."""

    op = OpUnderTest(
        name="layernorm_tl",
        backend="triton",
        call=myteam_ops.layernorm_tl,
        overload=torch.ops.myteam.layernorm_tl.default,
        reference=reference,
        error_bound=error_bound,
        dtypes=(torch.float32, torch.float64, torch.float16, torch.bfloat16),
        inputs=("x",),
        weights=("w", "b"),
        positive_domain=True,
        backward=torch.ops.myteam.layernorm_tl_backward.default,
        grad_error_bound=grad_error_bound,
    )
