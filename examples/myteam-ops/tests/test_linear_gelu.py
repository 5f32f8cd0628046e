"""Tests of myteam::linear_gelu (C = epilogue(A @ B, bias)): myteam_ops's matmul suite
(myteam_ops/testing/matmul.py) run on this op, on CPU and CUDA, for every dtype it supports.

Run: pytest -q tests/test_linear_gelu.py   (add -m "not large" to skip the >2**31-element CUDA test)
CUDA tests skip, with the reason, when no GPU is visible or linear_gelu has no CUDA implementation here.
"""

from __future__ import annotations

import torch

import myteam_ops
from myteam_ops.ops.linear_gelu import reference
from myteam_ops.testing.matmul import HopperPathChecks, MatmulOp, MatmulSuite


def error_bound(_m, acc, bias, acc_error):
    """The bound on the rounding error of (acc + bias) * sigmoid(1.702 * (acc + bias)), in units of _m.u,
    element by element: one line per step of the expression (kernelgen writes it from the
    expression; testing/error_model.py of the package says what each term means)."""
    _t0 = acc + bias  # acc + bias
    _e0 = acc_error + _m.one_rounding(_t0)
    _t1 = acc + bias  # acc + bias
    _e1 = acc_error + _m.one_rounding(_t1)
    _t2 = 1.702 * _t1  # 1.702 * (acc + bias)
    _e2 = _t1.abs() * _m.literal_rounding(1.702) + 1.702 * _e1 + _m.product_of_errors(_m.literal_rounding(1.702), _e1) + _m.one_rounding(_t2)
    _t3 = torch.sigmoid(_t2)  # sigmoid(1.702 * (acc + bias))
    _e3 = (_t3 * (1.0 - _t3) + 0.0963 * _e2 * _m.u).clamp(max=0.25) * _e2 + _m.function_error('sigmoid', _t2, _t3)
    _t4 = _t0 * _t3  # (acc + bias) * sigmoid(1.702 * (acc + bias))
    _e4 = _t3.abs() * _e0 + _t0.abs() * _e3 + _m.product_of_errors(_e0, _e3) + _m.one_rounding(_t4)
    return _e4


def grad_error_bound(_m, _grad, acc, bias, acc_error):
    """The bounds on the rounding errors of the gradients of (acc + bias) * sigmoid(1.702 * (acc +..., in units of
    _m.u, element by element, one per input: one line per step of each derivative (kernelgen writes
    them from the expression; testing/error_model.py of the package says what each term means)."""
    _t0 = acc + bias  # acc + bias
    _e0 = acc_error + _m.one_rounding(_t0)
    _t1 = 1.702 * _t0  # 1.702 * (acc + bias)
    _e1 = _t0.abs() * _m.literal_rounding(1.702) + 1.702 * _e0 + _m.product_of_errors(_m.literal_rounding(1.702), _e0) + _m.one_rounding(_t1)
    _t2 = torch.sigmoid(_t1)  # sigmoid(1.702 * (acc + bias))
    _e2 = (_t2 * (1.0 - _t2) + 0.0963 * _e1 * _m.u).clamp(max=0.25) * _e1 + _m.function_error('sigmoid', _t1, _t2)
    _t3 = 1.0 - _t2  # 1.0 - sigmoid(1.702 * (acc + bias))
    _e3 = _e2 + _m.one_rounding(_t3)
    _t4 = _t2 * _t3  # sigmoid(1.702 * (acc + bias)) * (1.0 - sigmoid(1.702 * (acc + bias)))
    _e4 = _t3.abs() * _e2 + _t2.abs() * _e3 + _m.product_of_errors(_e2, _e3) + _m.one_rounding(_t4)
    _t5 = _t0 * _t4  # (acc + bias) * (sigmoid(1.702 * (acc + bias)) * (1.0 - sigmoid(1.702 ...
    _e5 = _t4.abs() * _e0 + _t0.abs() * _e4 + _m.product_of_errors(_e0, _e4) + _m.one_rounding(_t5)
    _t6 = 1.702 * _t5  # 1.702 * ((acc + bias) * (sigmoid(1.702 * (acc + bias)) * (1.0 - sigmo...
    _e6 = _t5.abs() * _m.literal_rounding(1.702) + 1.702 * _e5 + _m.product_of_errors(_m.literal_rounding(1.702), _e5) + _m.one_rounding(_t6)
    _t7 = _t2 + _t6  # sigmoid(1.702 * (acc + bias)) + 1.702 * ((acc + bias) * (sigmoid(1.70...
    _e7 = _e2 + _e6 + _m.one_rounding(_t7)
    _t8 = _grad * _t7  # _grad * (sigmoid(1.702 * (acc + bias)) + 1.702 * ((acc + bias) * (sig...
    _e8 = _grad.abs() * _e7 + _m.one_rounding(_t8)
    return (_e8, _e8)


class TestLinearGelu(HopperPathChecks, MatmulSuite):
    """Every test of the matmul suite, run on linear_gelu. Cases of your own go here as methods
    named test_* (self.op, self.assert_matches and the suite's makers of arguments are at hand)."""

    op = MatmulOp(
        name="linear_gelu",
        backend="cuda",
        call=myteam_ops.linear_gelu,
        overload=torch.ops.myteam.linear_gelu.default,
        reference=reference,
        error_bound=error_bound,
        dtypes=(torch.float32, torch.float64, torch.float16, torch.bfloat16),
        bias=True,
        fused=True,
        backward=torch.ops.myteam.linear_gelu_backward.default,
        grad_error_bound=grad_error_bound,
        with_acc=torch.ops.myteam.linear_gelu_with_acc.default,
        library_dtypes=(torch.float32, torch.float64),
    )
