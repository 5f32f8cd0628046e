"""Tests of matmul::matmul (C = A @ B): matmul's matmul suite
(matmul/testing/matmul.py) run on this op, on CPU and CUDA, for every dtype it supports.

Run: pytest -q tests/test_matmul.py
CUDA tests skip, with the reason, when no GPU is visible or matmul has no CUDA implementation here.
"""

from __future__ import annotations

import torch

import matmul
from matmul.ops.matmul import reference
from matmul.testing.matmul import HopperPathChecks, MatmulOp, MatmulSuite


def error_bound(_m, acc, acc_error):
    """The bound on the rounding error of acc, in units of _m.u,
    element by element: one line per step of the expression (kernelgen writes it from the
    expression; testing/error_model.py of the package says what each term means)."""
    return acc_error


class TestMatmul(HopperPathChecks, MatmulSuite):
    """Every test of the matmul suite, run on matmul. Cases of your own go here as methods
    named test_* (self.op, self.assert_matches and the suite's makers of arguments are at hand)."""

    op = MatmulOp(
        name="matmul",
        backend="cuda",
        call=matmul.matmul,
        overload=torch.ops.matmul.matmul.default,
        reference=reference,
        error_bound=error_bound,
        dtypes=(torch.float32, torch.float64, torch.float16, torch.bfloat16),
        library_dtypes=(torch.float32, torch.float64),
    )
