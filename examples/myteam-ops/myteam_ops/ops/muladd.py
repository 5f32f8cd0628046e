"""The Python face of myteam::muladd: the public function, the reference, the fake
implementation for torch.compile, and the autograd formula.
"""

from __future__ import annotations

import torch

__all__ = ["muladd", "reference"]

_OP = "myteam::muladd"


def muladd(a: torch.Tensor, b: torch.Tensor, c: torch.Tensor) -> torch.Tensor:
    """Compute ``a * b + c`` elementwise, in one pass over memory.

    Args:
        a: a tensor of dtype float32, float64, float16, bfloat16.
        b: a tensor of dtype float32, float64, float16, bfloat16.
        c: a tensor of dtype float32, float64, float16, bfloat16.
            All inputs must have the same shape, dtype and device (no broadcasting, no type
            promotion). Any strides are accepted.

    Returns:
        A new contiguous tensor with the shape, dtype and device of the inputs.
        float16 and bfloat16 are computed in float32 and rounded once.

    Differentiable with respect to every input. Raises RuntimeError, naming the argument, on a
    device, shape or dtype mismatch or an unsupported dtype, and TypeError for a non-tensor.
    """
    # Checked here because such inputs never reach the C++ checks: the dispatcher routes a sparse
    # tensor to a SparseCPU/SparseCUDA kernel that does not exist and fails with a wall of text.
    for name, t in (("a", a), ("b", b), ("c", c)):
        if not isinstance(t, torch.Tensor):
            raise TypeError(f"muladd: {name} must be a torch.Tensor, got {type(t).__name__}")
        if t.layout != torch.strided:
            raise RuntimeError(f"muladd: {name} must be a dense tensor, got layout {t.layout}")
    return torch.ops.myteam.muladd.default(a, b, c)


def reference(a: torch.Tensor, b: torch.Tensor, c: torch.Tensor) -> torch.Tensor:
    """The specification of muladd in plain PyTorch.

    The tests compare the kernels against it, the benchmark races against it, and the default
    backward below is derived from it. Keep it in step with muladd_expr in csrc/muladd/muladd.h.
    """
    return a * b + c


# ---- torch.compile support --------------------------------------------------------------------
# While tracing, torch.compile runs ops on FakeTensors, which have shapes, dtypes and devices but
# no data. A custom op needs a "fake" implementation that computes the output's metadata without
# touching data. It must agree with the C++ code: same shape, dtype and device as the first input,
# contiguous strides.
@torch.library.register_fake(_OP)
def _muladd_fake(a: torch.Tensor, b: torch.Tensor, c: torch.Tensor) -> torch.Tensor:
    torch._check(b.shape == a.shape, lambda: f"muladd: b has shape {tuple(b.shape)} but a has shape {tuple(a.shape)}")
    torch._check(b.dtype == a.dtype, lambda: f"muladd: b has dtype {b.dtype} but a has dtype {a.dtype}")
    torch._check(c.shape == a.shape, lambda: f"muladd: c has shape {tuple(c.shape)} but a has shape {tuple(a.shape)}")
    torch._check(c.dtype == a.dtype, lambda: f"muladd: c has dtype {c.dtype} but a has dtype {a.dtype}")
    return torch.empty(a.shape, dtype=a.dtype, device=a.device)


# ---- autograd ---------------------------------------------------------------------------------
def _setup_context(ctx, inputs, output) -> None:
    # The backward needs the inputs (not the output) to evaluate the derivative.
    ctx.save_for_backward(*inputs)


_BACKWARD = "myteam::muladd_backward"


@torch.library.register_fake(_BACKWARD)
def _muladd_backward_fake(_grad: torch.Tensor, a: torch.Tensor, b: torch.Tensor, c: torch.Tensor, _needs: list[bool]) -> list[torch.Tensor]:
    return [torch.empty(a.shape, dtype=a.dtype, device=a.device) for need in _needs if need]


def _backward(ctx, grad_out: torch.Tensor):
    # The generated backward: muladd_backward computes, in one pass over memory, the gradient of
    # every input that needs one (ctx.needs_input_grad), from the derivatives kernelgen wrote from the
    # expression into csrc/muladd/muladd.h (muladd_grad). To differentiate reference() instead,
    # register _backward_vjp below.
    needs = list(ctx.needs_input_grad)
    grads = iter(torch.ops.myteam.muladd_backward.default(grad_out, *ctx.saved_tensors, needs))
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
