"""The Python face of myteam::linear_gelu (C = epilogue(A @ B, bias)): the public function, the
reference, the fake implementation for torch.compile, and the autograd formula.
"""

from __future__ import annotations

import torch

__all__ = ["linear_gelu", "reference"]

_OP = "myteam::linear_gelu"


def linear_gelu(a: torch.Tensor, b: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
    """Matrix product with a fused epilogue: ``(acc + bias) * sigmoid(1.702 * (acc + bias))`` for every element ``acc`` of ``a @ b`` (and `bias[n]` of its column):
    (M, K) @ (K, N) -> (M, N), or batched (B, M, K) @ (B, K, N).

    Args:
        a, b: tensors of dtype float32, float64, float16, bfloat16, with the same dtype and device. Any strides are
            accepted (transposed views are fine). No broadcasting of the batch dimension.
        bias: a 1-D tensor of N elements, same dtype and device, broadcast over the rows.

    Returns:
        A new contiguous tensor. float16 and bfloat16 accumulate in float32 (on the GPU, with
        tensor cores on sm_80 and newer); float64 accumulates in float64. K = 0 gives the epilogue of zeros.

    Differentiable with respect to every input. Raises RuntimeError naming both shapes on a
    rank, inner-dimension or batch mismatch, and on mixed dtypes or devices.
    """
    for name, t in (("A", a), ("B", b), ("bias", bias)):
        if not isinstance(t, torch.Tensor):
            raise TypeError(f"linear_gelu: {name} must be a torch.Tensor, got {type(t).__name__}")
        if t.layout != torch.strided:
            raise RuntimeError(f"linear_gelu: {name} must be a dense tensor, got layout {t.layout}")
    return torch.ops.myteam.linear_gelu.default(a, b, bias)


def reference(a: torch.Tensor, b: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
    """The specification in plain PyTorch (the product with cuBLAS on CUDA, then the epilogue as
    separate ops); the tests, the benchmark and the default backward use it. Keep it in step with
    linear_gelu_epilogue in csrc/linear_gelu/linear_gelu_problem.h."""
    acc = torch.matmul(a, b)
    return (acc + bias) * torch.sigmoid(1.702 * (acc + bias))


# ---- torch.compile support --------------------------------------------------------------------
# Under torch.compile the op runs on FakeTensors (metadata, no data); this computes the output's
# metadata, agreeing with the C++: (M, N) or (B, M, N), contiguous, A's dtype and device.
@torch.library.register_fake(_OP)
def _linear_gelu_fake(a: torch.Tensor, b: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
    torch._check(a.dim() in (2, 3) and b.dim() == a.dim(), lambda: f"linear_gelu: expected A and B both 2-D or both 3-D, got {tuple(a.shape)} and {tuple(b.shape)}")
    torch._check(a.shape[-1] == b.shape[-2], lambda: f"linear_gelu: inner dimensions differ: A {tuple(a.shape)}, B {tuple(b.shape)}")
    torch._check(a.dtype == b.dtype, lambda: f"linear_gelu: B has dtype {b.dtype} but A has dtype {a.dtype}")
    torch._check(bias.dim() == 1 and bias.shape[0] == b.shape[-1], lambda: f"linear_gelu: bias must be 1-D with N = {b.shape[-1]} elements (B is {list(b.shape)}), got bias {list(bias.shape)}")
    torch._check(bias.dtype == a.dtype, lambda: f"linear_gelu: bias has dtype {bias.dtype} but A has dtype {a.dtype}")
    if a.dim() == 3:
        torch._check(a.shape[0] == b.shape[0], lambda: f"linear_gelu: batch sizes differ: A {tuple(a.shape)}, B {tuple(b.shape)}")
        return a.new_empty((a.shape[0], a.shape[1], b.shape[2]))
    return a.new_empty((a.shape[0], b.shape[1]))


# ---- autograd ---------------------------------------------------------------------------------
def _setup_context(ctx, inputs, output) -> None:
    # The backward needs the inputs (not the output) to evaluate the derivative.
    ctx.save_for_backward(*inputs)


def _backward(ctx, grad_out: torch.Tensor):
    # ---- AUTOGRAD STUB ------------------------------------------------------------------------
    # The default backward is the vector-Jacobian product of reference(), computed by
    # torch.func.vjp in op-math precision (float32 for float16/bfloat16 inputs). It is correct for
    # any expression kernelgen accepts, and gradcheck in the tests proves it, but it runs several
    # PyTorch kernels. When the backward matters for speed, write a fused backward kernel: declare
    # a second op (say linear_gelu_backward) in csrc/ the same way as linear_gelu, and call it here.
    # ------------------------------------------------------------------------------------------
    saved = ctx.saved_tensors
    dtype = saved[0].dtype
    opmath = torch.float32 if dtype in (torch.float16, torch.bfloat16) else dtype

    def in_opmath(*xs: torch.Tensor) -> torch.Tensor:
        return reference(*(x.to(opmath) for x in xs))

    _, vjp = torch.func.vjp(in_opmath, *saved)
    return vjp(grad_out.to(opmath))


torch.library.register_autograd(_OP, _backward, setup_context=_setup_context)
