"""Tests of myteam::linear_gelu (C = epilogue(A @ B, bias)): myteam_ops's matmul suite
(myteam_ops/testing/matmul.py) run on this op, on CPU and CUDA, for every dtype it supports.

Run: pytest -q tests/test_linear_gelu.py
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
    _e2 = _t1.abs() * _m.literal_rounding(1.702) + 1.702 * _e1 + _m.one_rounding(_t2)
    _t3 = torch.sigmoid(_t2)  # sigmoid(1.702 * (acc + bias))
    _e3 = _t3 * (1.0 - _t3) * _e2 + _m.function_error('sigmoid', _t2, _t3)
    _t4 = _t0 * _t3  # (acc + bias) * sigmoid(1.702 * (acc + bias))
    _e4 = _t3.abs() * _e0 + _t0.abs() * _e3 + _m.one_rounding(_t4)
    return _e4


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
    )
