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
    if torch.is_grad_enabled() and (a.requires_grad or b.requires_grad or bias.requires_grad):
        # Training: the forward also stores the accumulator A @ B, which the backward reads (the
        # alternative, computing it again there, costs a third matrix product).
        return torch.ops.myteam.linear_gelu_with_acc.default(a, b, bias)[0]
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
# C = epilogue(acc, bias) with acc = A @ B, so the backward is the epilogue's derivative, element
# by element, then two matrix products:
#   dacc = grad_out * d out / d acc                 (linear_gelu_backward: csrc/linear_gelu/linear_gelu_problem.h)
#   dL/dA = dacc @ B^T,  dL/dB = A^T @ dacc          (torch.matmul: cuBLAS on CUDA, in the inputs' dtype)
#   dL/dbias = the column sums of grad_out * d out / d bias  (linear_gelu_backward, without atomics)

_BACKWARD = "myteam::linear_gelu_backward"
_WITH_ACC = "myteam::linear_gelu_with_acc"


@torch.library.register_fake(_WITH_ACC)
def _linear_gelu_with_acc_fake(a: torch.Tensor, b: torch.Tensor, bias: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    out = _linear_gelu_fake(a, b, bias)
    return out, torch.empty_like(out)


@torch.library.register_fake(_BACKWARD)
def _linear_gelu_backward_fake(_grad: torch.Tensor, acc: torch.Tensor, bias: torch.Tensor, _needs: list[bool]) -> list[torch.Tensor]:
    # dacc has the output's shape, the bias's gradient the bias's.
    grads = [_grad.new_empty(_grad.shape)] if _needs[0] else []
    if _needs[1]:
        grads.append(_grad.new_empty((_grad.shape[-1],)))
    return grads


def _gradients(ctx, grad_out: torch.Tensor, a, b, acc, bias):
    """dL/dA, dL/dB and dL/dbias, those autograd asks for (ctx.needs_input_grad)."""
    need_a, need_b = ctx.needs_input_grad[0], ctx.needs_input_grad[1]
    needs = [need_a or need_b, ctx.needs_input_grad[2]]
    grads = iter(torch.ops.myteam.linear_gelu_backward.default(grad_out, acc, bias, needs) if any(needs) else ())
    dacc = next(grads) if needs[0] else None
    grad_bias = next(grads) if needs[1] else None
    grad_a = torch.matmul(dacc, b.transpose(-1, -2)) if need_a else None
    grad_b = torch.matmul(a.transpose(-1, -2), dacc) if need_b else None
    return grad_a, grad_b, grad_bias


def _setup_context(ctx, inputs, output) -> None:
    # The registered op called directly (not through linear_gelu() above) keeps only its arguments: its
    # backward computes the accumulator again with torch.matmul.
    ctx.save_for_backward(*inputs)


def _backward(ctx, grad_out: torch.Tensor):
    # The generated backward: linear_gelu_backward computes, in one pass over memory, the epilogue's
    # derivatives that kernelgen wrote from the expression into csrc/linear_gelu/linear_gelu_problem.h
    # (linear_gelu_epilogue_grad). To differentiate reference() instead, register _backward_vjp below.
    a, b, bias = ctx.saved_tensors
    acc = torch.matmul(a, b)
    return _gradients(ctx, grad_out, a, b, acc, bias)


torch.library.register_autograd(_OP, _backward, setup_context=_setup_context)


def _setup_context_with_acc(ctx, inputs, output) -> None:
    # Saved: A for dL/dB, B for dL/dA, the bias, and the accumulator (M x N in the inputs' dtype, the
    # size of the output): the derivatives read it.
    a, b, bias = inputs
    acc = output[1]
    ctx.mark_non_differentiable(acc)
    ctx.save_for_backward(a if ctx.needs_input_grad[1] else None, b if ctx.needs_input_grad[0] else None, bias, acc)


def _backward_with_acc(ctx, grad_out: torch.Tensor, _grad_acc: torch.Tensor | None):
    a, b, bias, acc = ctx.saved_tensors
    return _gradients(ctx, grad_out, a, b, acc, bias)


torch.library.register_autograd(_WITH_ACC, _backward_with_acc, setup_context=_setup_context_with_acc)


def _backward_vjp(ctx, grad_out: torch.Tensor):
    # The vector-Jacobian product of reference(), computed by torch.func.vjp in op-math precision
    # (float32 for float16/bfloat16 inputs): correct for any epilogue, several PyTorch kernels and float32
    # products. Register it in place of _backward above to rule the generated backward out.
    saved = ctx.saved_tensors
    dtype = saved[0].dtype
    opmath = torch.float32 if dtype in (torch.float16, torch.bfloat16) else dtype

    def in_opmath(*xs: torch.Tensor) -> torch.Tensor:
        return reference(*(x.to(opmath) for x in xs))

    _, vjp = torch.func.vjp(in_opmath, *saved)
    return vjp(grad_out.to(opmath))
