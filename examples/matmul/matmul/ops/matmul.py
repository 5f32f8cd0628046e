"""The Python face of matmul::matmul (C = A @ B): the public function, the reference,
the fake implementation for torch.compile, and the autograd formula.
"""

from __future__ import annotations

import torch

__all__ = ["matmul", "reference"]

_OP = "matmul::matmul"


def matmul(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """Matrix product ``a @ b``: (M, K) @ (K, N) -> (M, N), or batched (B, M, K) @ (B, K, N).

    Args:
        a, b: tensors of dtype float32, float64, float16, bfloat16, with the same dtype and device. Any strides are
            accepted (transposed views are fine). No broadcasting of the batch dimension.

    Returns:
        A new contiguous tensor. float16 and bfloat16 accumulate in float32 (on the GPU, with
        tensor cores on sm_80 and newer); float64 accumulates in float64. K = 0 gives zeros.

    Differentiable with respect to both inputs. Raises RuntimeError naming both shapes on a
    rank, inner-dimension or batch mismatch, and on mixed dtypes or devices.
    """
    for name, t in (("A", a), ("B", b)):
        if not isinstance(t, torch.Tensor):
            raise TypeError(f"matmul: {name} must be a torch.Tensor, got {type(t).__name__}")
        if t.layout != torch.strided:
            raise RuntimeError(f"matmul: {name} must be a dense tensor, got layout {t.layout}")
    return torch.ops.matmul.matmul.default(a, b)


def reference(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """The specification in plain PyTorch (cuBLAS on CUDA); the tests and the benchmark use it."""
    return torch.matmul(a, b)


# ---- torch.compile support --------------------------------------------------------------------
# Under torch.compile the op runs on FakeTensors (metadata, no data); this computes the output's
# metadata, agreeing with the C++: (M, N) or (B, M, N), contiguous, A's dtype and device.
@torch.library.register_fake(_OP)
def _matmul_fake(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    torch._check(a.dim() in (2, 3) and b.dim() == a.dim(), lambda: f"matmul: expected A and B both 2-D or both 3-D, got {tuple(a.shape)} and {tuple(b.shape)}")
    torch._check(a.shape[-1] == b.shape[-2], lambda: f"matmul: inner dimensions differ: A {tuple(a.shape)}, B {tuple(b.shape)}")
    torch._check(a.dtype == b.dtype, lambda: f"matmul: B has dtype {b.dtype} but A has dtype {a.dtype}")
    if a.dim() == 3:
        torch._check(a.shape[0] == b.shape[0], lambda: f"matmul: batch sizes differ: A {tuple(a.shape)}, B {tuple(b.shape)}")
        return a.new_empty((a.shape[0], a.shape[1], b.shape[2]))
    return a.new_empty((a.shape[0], b.shape[1]))


# ---- autograd ---------------------------------------------------------------------------------
def _setup_context(ctx, inputs, output) -> None:
    a, b = inputs
    # Save only what the backward needs: B for grad_A, A for grad_B.
    ctx.save_for_backward(a if ctx.needs_input_grad[1] else None, b if ctx.needs_input_grad[0] else None)


def _backward(ctx, grad_c: torch.Tensor):
    # C = A @ B, so dL/dA = dL/dC @ B^T and dL/dB = A^T @ dL/dC. Both are matrix products, done with
    # this very op (the transposed views are made contiguous inside it). The gradients are
    # differentiable in turn, so double backward works too.
    a, b = ctx.saved_tensors
    grad_a = matmul(grad_c, b.transpose(-1, -2)) if ctx.needs_input_grad[0] else None
    grad_b = matmul(a.transpose(-1, -2), grad_c) if ctx.needs_input_grad[1] else None
    return grad_a, grad_b


torch.library.register_autograd(_OP, _backward, setup_context=_setup_context)
