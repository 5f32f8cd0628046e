"""The Python face of myteam::gelu_tl on the Triton backend: the kernel and its launcher, the
registration (torch.library.triton_op), the CPU implementation, the reference and the autograd
formula. There is no C++: Triton compiles the kernel on its first call for each dtype (and caches
it on disk), so editing this file and re-running the tests is the whole loop.

Why Triton first: write the op in Triton, measure it against torch.compile and, if the package has
one, a CUDA C++ op of the same formula (benchmarks/bench_gelu_tl.py races them), and move to
CUDA C++ (`kernelgen add ... --backend cuda`) only when the numbers say so.
"""

from __future__ import annotations

import torch
from torch.library import wrap_triton

# The eager fast path, shared by the package's Triton ops (../_triton_eager.py says when and why): the
# public function launches the kernel itself when the registered op would do exactly that and nothing
# else; torch.ops.myteam.gelu_tl always goes through the op.
from .._triton_eager import eager_launch_ok as _eager_launch_ok
from .._triton_eager import eager_autograd_ok as _eager_autograd_ok
# The grid's arithmetic on the host, in plain integers: triton.cdiv, a constexpr function, costs
# microseconds a call from Python (../_triton_eager.py).
from .._triton_eager import cdiv as _cdiv

try:
    import triton
    import triton.language as tl
    from triton.language.extra import libdevice
except ImportError:  # a CPU-only install: the CPU implementation below still works
    triton = None

#: True when the CUDA implementation can run (triton is installed).
TRITON_AVAILABLE: bool = triton is not None

__all__ = ["gelu_tl", "reference", "TRITON_AVAILABLE"]

_OP = "myteam::gelu_tl"
_DTYPES = (torch.float32, torch.float64, torch.float16, torch.bfloat16, )


def gelu_tl(x: torch.Tensor) -> torch.Tensor:
    """Compute ``x * sigmoid(1.702 * x)`` elementwise, in one pass over memory.

    Args:
        x: a tensor of dtype float32, float64, float16, bfloat16.
            Any strides are accepted.

    Returns:
        A new contiguous tensor with the shape, dtype and device of the input.
        float16 and bfloat16 are computed in float32 and rounded once.

    Differentiable with respect to every input. Raises RuntimeError, naming the argument, on a
    device, shape or dtype mismatch or an unsupported dtype, and TypeError for a non-tensor.
    """
    for name, t in (("x", x), ):
        if not isinstance(t, torch.Tensor):
            raise TypeError(f"gelu_tl: {name} must be a torch.Tensor, got {type(t).__name__}")
        if t.layout != torch.strided:
            raise RuntimeError(f"gelu_tl: {name} must be a dense tensor, got layout {t.layout}")
    if _eager_launch_ok(x):
        return _gelu_tl_launch(x, _gelu_tl_kernel)  # see "the eager fast path" below
    if _eager_autograd_ok(x):
        return _GeluTlAutograd.apply(x)  # the eager training path, below
    return torch.ops.myteam.gelu_tl.default(x)


def reference(x: torch.Tensor) -> torch.Tensor:
    """The specification of gelu_tl in plain PyTorch.

    The tests compare the kernel against it, the benchmark races against it, the CPU
    implementation and the default backward are derived from it. Keep it in step with the
    expression in _gelu_tl_kernel below.
    """
    return x * torch.sigmoid(1.702 * x)


def _check_inputs(x: torch.Tensor) -> None:
    # The same checks, and the same messages, as the CUDA C++ backend's.
    if x.dtype not in _DTYPES:
        raise RuntimeError(f"gelu_tl: x has dtype {x.dtype}, but gelu_tl supports float32, float64, float16, bfloat16")


# ---- the kernel ---------------------------------------------------------------------------------
# Each program handles BLOCK consecutive elements of the flattened, contiguous inputs. Offsets are
# int64: program_id * BLOCK in int32 would overflow past 2**31 elements. The mask covers the ragged
# tail. Loads are widened to the op-math dtype ACC (float32 for float16/bfloat16/float32, float64
# for float64), the expression runs there, and the result is rounded once when stored.
if TRITON_AVAILABLE:

    @triton.jit
    def _gelu_tl_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr, ACC: tl.constexpr):
        offsets = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
        mask = offsets < n
        x = tl.load(x_ptr + offsets, mask=mask).to(ACC)
        # ---- EDIT HERE: the kernel body (keep reference() above in step) ----------------------------
        result = x * (1.0 / (1.0 + tl.exp(-(tl.full((), 1.702, ACC) * x))))
        # ---- end of EDIT HERE ---------------------------------------------------------------------------
        tl.store(out_ptr + offsets, result.to(out_ptr.dtype.element_ty), mask=mask)


# Block sizes, fixed rather than autotuned: 16 elements per thread at 4 warps for 1- and 2-byte
# types, 8 for 4-byte and 4 for 8-byte types (64, 32 or 32 bytes of each input in flight per
# thread). triton.autotune would re-tune for every new size, stall the first call, and cannot run
# inside CUDA graph capture. On an H100 these sizes run at the speed of torch.compile's own kernels.
_BLOCK = {1: 2048, 2: 2048, 4: 1024, 8: 512}
_NUM_WARPS = 4


# ---- registration -------------------------------------------------------------------------------
# triton_op (not custom_op) makes the op's body visible to torch.compile: Inductor traces into it and
# sees the Triton kernel (launched through wrap_triton) instead of an opaque call. It also uses the
# body, run on fake tensors, as the op's fake implementation, so no register_fake is needed.
@torch.library.triton_op(_OP, mutates_args=())
def _gelu_tl_impl(x: torch.Tensor) -> torch.Tensor:
    if x.device.type != "cuda":
        # Tracing on CPU (opcheck, torch.compile) runs this body too: stay off the GPU path.
        return _gelu_tl_cpu(x)
    if not TRITON_AVAILABLE:
        raise RuntimeError("gelu_tl: the CUDA implementation needs triton (pip install triton)")
    return _gelu_tl_launch(x, wrap_triton(_gelu_tl_kernel))


def _gelu_tl_launch(x: torch.Tensor, kernel) -> torch.Tensor:
    """The CUDA implementation: the checks, then one launch of ``kernel``, which is the @triton.jit
    function itself on the eager fast path and wrap_triton of it inside the registered op (where
    torch.compile must see the launch)."""
    _check_inputs(x)
    # Row-major data for flat offsets; the *_contig locals keep any copies alive during the launch.
    x_contig = x.contiguous()
    out = torch.empty(x.shape, dtype=x.dtype, device=x.device)
    n = out.numel()
    if n == 0:
        return out
    block = _BLOCK[out.element_size()]
    acc = tl.float64 if out.dtype == torch.float64 else tl.float32
    grid = (_cdiv(n, block),)
    # The inputs' GPU must be current: Triton launches on the current device, on its current stream
    # (the caller's stream, so CUDA graphs and side streams work). Switching only when needed saves
    # host time, which is what bounds a launch of a few microseconds of work.
    if x.device.index == torch.cuda.current_device():
        kernel[grid](x_contig, out, n, BLOCK=block, ACC=acc, num_warps=_NUM_WARPS)
    else:
        with torch.cuda.device(x.device):
            kernel[grid](x_contig, out, n, BLOCK=block, ACC=acc, num_warps=_NUM_WARPS)
    return out


# The CPU implementation: the reference, in op-math precision, rounded once.
@torch.library.register_kernel(_OP, "cpu")
def _gelu_tl_cpu(x: torch.Tensor) -> torch.Tensor:
    _check_inputs(x)
    dtype = x.dtype
    opmath = torch.float32 if dtype in (torch.float16, torch.bfloat16) else dtype
    return reference(x.contiguous().to(opmath)).to(dtype).contiguous()


# ---- the backward -------------------------------------------------------------------------------
# gelu_tl_backward: the gradient of every input asked for, in one pass over memory, from the
# derivatives kernelgen wrote from the expression (below, in the kernel and in the CPU implementation).
def _check_backward_inputs(_grad: torch.Tensor, x: torch.Tensor, _needs: list[bool]) -> None:
    # The forward's checks, then the output's gradient: the inputs' shape, dtype and device.
    _check_inputs(x)
    if _grad.device != x.device or _grad.dtype != x.dtype or _grad.shape != x.shape:
        raise RuntimeError(f"gelu_tl_backward: grad is {_grad.dtype} of shape {list(_grad.shape)} on {_grad.device}, "
                           f"but the inputs are {x.dtype} of shape {list(x.shape)} on {x.device}")
    if len(_needs) != 1:
        raise RuntimeError(f"gelu_tl_backward: got {len(_needs)} flags in _needs, but gelu_tl has 1 input (one flag each)")


if TRITON_AVAILABLE:

    # _need<j> is a run-time flag, never a compile-time constant (do_not_specialize: Triton would make a
    # flag of 1 one): the kernel computes every gradient the same way whatever is asked for, so a gradient
    # has the same bits whether or not the others are stored.
    @triton.jit(do_not_specialize=["_need0"])
    def _gelu_tl_backward_kernel(_grad_ptr, x_ptr, _d0_ptr, _need0, n, BLOCK: tl.constexpr, ACC: tl.constexpr):
        offsets = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
        mask = offsets < n
        _grad = tl.load(_grad_ptr + offsets, mask=mask).to(ACC)
        x = tl.load(x_ptr + offsets, mask=mask).to(ACC)
        # ---- EDIT HERE: the gradients, _grad times the derivative of the expression by each input ------
        _t0 = (1.0 / (1.0 + tl.exp(-(tl.full((), 1.702, ACC) * x))))
        _d0 = _grad * (_t0 + tl.full((), 1.702, ACC) * (x * (_t0 * (tl.full((), 1.0, ACC) - _t0))))  # d/dx: _grad * (sigmoid(1.702 * x) + 1.702 * (x * (sigmoid(1.702 * x) * (1.0 - sigmoid(1.702 * x)))))
        # ---- end of EDIT HERE ---------------------------------------------------------------------------
        if _need0 != 0:
            tl.store(_d0_ptr + offsets, _d0.to(_d0_ptr.dtype.element_ty), mask=mask)


@torch.library.triton_op(_OP + "_backward", mutates_args=(), schema="(Tensor _grad, Tensor x, bool[] _needs) -> Tensor[]")
def _gelu_tl_backward_impl(_grad: torch.Tensor, x: torch.Tensor, _needs: list[bool]) -> list[torch.Tensor]:
    if x.device.type != "cuda":
        return _gelu_tl_backward_cpu(_grad, x, _needs)
    if not TRITON_AVAILABLE:
        raise RuntimeError("gelu_tl_backward: the CUDA implementation needs triton (pip install triton)")
    return _gelu_tl_backward_launch(_grad, x, _needs, wrap_triton)


def _gelu_tl_backward_launch(_grad: torch.Tensor, x: torch.Tensor, _needs: list[bool], wrap) -> list[torch.Tensor]:
    """The CUDA implementation of the backward: the checks, then one launch of wrap(the kernel): wrap_triton
    inside the registered op (where torch.compile must see the launch), the kernel itself on the eager
    training path (_GeluTlAutograd below)."""
    _check_backward_inputs(_grad, x, _needs)
    _grad_contig = _grad.contiguous()
    x_contig = x.contiguous()
    grads = [torch.empty(x.shape, dtype=x.dtype, device=x.device) for need in _needs if need]
    n = _grad.numel()
    if n == 0 or not grads:
        return grads
    # Input j's gradient, or (never written) the output's gradient where it is not asked for.
    slots = iter(grads)
    outs = [next(slots) if need else _grad_contig for need in _needs]
    block = _BLOCK[_grad.element_size()]
    acc = tl.float64 if _grad.dtype == torch.float64 else tl.float32
    kernel, grid, flags = wrap(_gelu_tl_backward_kernel), (_cdiv(n, block),), [int(need) for need in _needs]
    # On the inputs' GPU, on its current stream (see _gelu_tl_launch).
    if x.device.index == torch.cuda.current_device():
        kernel[grid](_grad_contig, x_contig, *outs, *flags, n, BLOCK=block, ACC=acc, num_warps=_NUM_WARPS)
    else:
        with torch.cuda.device(x.device):
            kernel[grid](_grad_contig, x_contig, *outs, *flags, n, BLOCK=block, ACC=acc, num_warps=_NUM_WARPS)
    return grads


@torch.library.register_kernel(_OP + "_backward", "cpu")
def _gelu_tl_backward_cpu(_grad: torch.Tensor, x: torch.Tensor, _needs: list[bool]) -> list[torch.Tensor]:
    # The same derivatives in PyTorch, in op-math precision, each gradient rounded once.
    _check_backward_inputs(_grad, x, _needs)
    dtype = x.dtype
    opmath = torch.float32 if dtype in (torch.float16, torch.bfloat16) else dtype
    _grad = _grad.to(opmath)
    x = x.to(opmath)
    _t0 = torch.sigmoid(1.702 * x)
    grads = []
    if _needs[0]:
        grads.append(torch.empty(x.shape, dtype=dtype, device=x.device).copy_(_grad * (_t0 + 1.702 * (x * (_t0 * (1.0 - _t0))))))
    return grads


# ---- autograd ---------------------------------------------------------------------------------
def _setup_context(ctx, inputs, output) -> None:
    # The backward needs the inputs (not the output) to evaluate the derivative.
    ctx.save_for_backward(*inputs)


_BACKWARD = "myteam::gelu_tl_backward"


@torch.library.register_fake(_BACKWARD)
def _gelu_tl_backward_fake(_grad: torch.Tensor, x: torch.Tensor, _needs: list[bool]) -> list[torch.Tensor]:
    return [torch.empty(x.shape, dtype=x.dtype, device=x.device) for need in _needs if need]


def _backward(ctx, grad_out: torch.Tensor):
    # The generated backward: gelu_tl_backward computes, in one pass over memory, the gradient of
    # every input that needs one (ctx.needs_input_grad), from the derivatives kernelgen wrote from the
    # expression into _gelu_tl_backward_kernel and _gelu_tl_backward_cpu above. To differentiate reference() instead,
    # register _backward_vjp below.
    needs = list(ctx.needs_input_grad)
    grads = iter(torch.ops.myteam.gelu_tl_backward.default(grad_out, *ctx.saved_tensors, needs))
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


# ---- the eager training path --------------------------------------------------------------------
class _GeluTlAutograd(torch.autograd.Function):
    """What autograd records for an eager call of gelu_tl() that needs gradients, when nothing else
    watches the call (../_triton_eager.py: eager_autograd_ok): the registered op's forward and backward
    (_gelu_tl_launch, _gelu_tl_backward_launch), their kernels launched directly. The saved tensors
    and the gradients are the registered op's; the host time per step is a fraction of it."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return _gelu_tl_launch(x, _gelu_tl_kernel)

    @staticmethod
    @torch.autograd.function.once_differentiable
    def backward(ctx, grad_out):
        needs = list(ctx.needs_input_grad)
        grads = iter(_gelu_tl_backward_launch(grad_out, *ctx.saved_tensors, needs, lambda kernel: kernel))
        return tuple(next(grads) if need else None for need in needs)

