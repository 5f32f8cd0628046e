"""The Python face of myteam::layernorm: the public function, the reference, the fake
implementation for torch.compile, and the autograd formula.
"""

from __future__ import annotations

import torch

__all__ = ["layernorm", "reference"]

_OP = "myteam::layernorm"


def layernorm(x: torch.Tensor, w: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """Compute ``(x - mean(x)) * rsqrt(mean((x - mean(x)) ** 2.0) + 1e-05) * w + b`` over each row (the last dimension).

    Args:
        x: a tensor of dtype float32, float64, float16, bfloat16, with at least one dimension; its last
            dimension is a row, every leading one a batch of rows.
        w: a 1-D weight with one value per element of a row (shape ``(C,)`` for rows of C), of the
            inputs' dtype and device, the same for every row.
        b: a 1-D weight with one value per element of a row (shape ``(C,)`` for rows of C), of the
            inputs' dtype and device, the same for every row.
        Any strides are accepted.

    Returns:
        A new contiguous tensor with the shape, dtype and device of x. Reductions and
        arithmetic run in float32 for float16 and bfloat16 (float64 for float64); the result is
        rounded once.

    Differentiable with respect to every argument. Raises RuntimeError, naming the argument, on a
    device, shape or dtype mismatch or an unsupported dtype, and TypeError for a non-tensor.
    """
    # Checked here because such inputs never reach the C++ checks: the dispatcher routes a sparse
    # tensor to a SparseCPU/SparseCUDA kernel that does not exist and fails with a wall of text.
    for name, t in (("x", x), ("w", w), ("b", b)):
        if not isinstance(t, torch.Tensor):
            raise TypeError(f"layernorm: {name} must be a torch.Tensor, got {type(t).__name__}")
        if t.layout != torch.strided:
            raise RuntimeError(f"layernorm: {name} must be a dense tensor, got layout {t.layout}")
    return torch.ops.myteam.layernorm.default(x, w, b)


def reference(x: torch.Tensor, w: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """The specification of layernorm in plain PyTorch: ``(x - mean(x)) * rsqrt(mean((x - mean(x)) ** 2.0) + 1e-05) * w + b``.

    The tests compare the kernel against it, the benchmark races against it, and the default
    backward is derived from it. Keep it in step with the kernel
    (csrc/layernorm/layernorm.h). Each reduction is computed once, over the last dimension.
    """
    _r0 = torch.mean(x, dim=-1, keepdim=True)  # mean(x)
    _r1 = torch.mean((x - _r0) ** 2.0, dim=-1, keepdim=True)  # mean((x - mean(x)) ** 2.0)
    return (x - _r0) * torch.rsqrt(_r1 + 1e-05) * w + b


# ---- torch.compile support --------------------------------------------------------------------
# While tracing, torch.compile runs ops on FakeTensors, which have shapes, dtypes and devices but
# no data. A custom op needs a "fake" implementation that computes the output's metadata without
# touching data. It must agree with the C++ code: same shape, dtype and device as x,
# contiguous strides.
@torch.library.register_fake(_OP)
def _layernorm_fake(x: torch.Tensor, w: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    torch._check(x.dim() >= 1, lambda: "layernorm: x needs at least one dimension (the row)")
    torch._check(w.dim() == 1 and w.shape[0] == x.shape[-1], lambda: f"layernorm: weight w has shape {tuple(w.shape)} but must be ({x.shape[-1]},)")
    torch._check(w.dtype == x.dtype, lambda: f"layernorm: weight w has dtype {w.dtype} but x has dtype {x.dtype}")
    torch._check(b.dim() == 1 and b.shape[0] == x.shape[-1], lambda: f"layernorm: weight b has shape {tuple(b.shape)} but must be ({x.shape[-1]},)")
    torch._check(b.dtype == x.dtype, lambda: f"layernorm: weight b has dtype {b.dtype} but x has dtype {x.dtype}")
    return torch.empty(x.shape, dtype=x.dtype, device=x.device)


# ---- autograd ---------------------------------------------------------------------------------
def _setup_context(ctx, inputs, output) -> None:
    # The backward needs the inputs (not the output) to evaluate the derivative.
    ctx.save_for_backward(*inputs)


_BACKWARD = "myteam::layernorm_backward"


@torch.library.register_fake(_BACKWARD)
def _layernorm_backward_fake(_grad: torch.Tensor, x: torch.Tensor, w: torch.Tensor, b: torch.Tensor, _needs: list[bool]) -> list[torch.Tensor]:
    # The gradient of each argument asked for has that argument's shape: an input's, or a weight's.
    return [torch.empty(t.shape, dtype=t.dtype, device=t.device) for t, need in zip((x, w, b,), _needs) if need]


def _backward(ctx, grad_out: torch.Tensor):
    # The generated backward: layernorm_backward computes, in one pass over the rows, the gradient of
    # every input and weight that needs one (ctx.needs_input_grad), from the derivatives kernelgen wrote
    # from the expression into csrc/layernorm/layernorm.h (layernorm_grad and its reductions). It saves
    # nothing but the arguments: it computes the forward's per-row values again from the row it holds.
    # To differentiate reference() instead, register _backward_vjp below.
    needs = list(ctx.needs_input_grad)
    grads = iter(torch.ops.myteam.layernorm_backward.default(grad_out, *ctx.saved_tensors, needs))
    return tuple(next(grads) if need else None for need in needs)


def _backward_vjp(ctx, grad_out: torch.Tensor):
    # The vector-Jacobian product of reference(), computed by torch.func.vjp in op-math precision
    # (float32 for float16/bfloat16 inputs): correct for any expression, and several PyTorch kernels.
    saved = ctx.saved_tensors
    dtype = saved[0].dtype
    opmath = torch.float32 if dtype in (torch.float16, torch.bfloat16) else dtype

    def in_opmath(*xs: torch.Tensor) -> torch.Tensor:
        return reference(*(x.to(opmath) for x in xs))

    _, vjp = torch.func.vjp(in_opmath, *saved)
    return vjp(grad_out.to(opmath))


torch.library.register_autograd(_OP, _backward, setup_context=_setup_context)
