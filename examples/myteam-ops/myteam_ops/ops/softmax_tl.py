"""The Python face of myteam::softmax_tl on the Triton backend (rowwise): the kernels and their
launcher, the registration (torch.library.triton_op), the CPU implementation, the reference and the
autograd formula. There is no C++: Triton compiles a kernel on its first call for each dtype and
block size (and caches it on disk), so editing this file and re-running the tests is the whole loop.

Why Triton first: write the op in Triton, measure it against torch.compile and, if the package has
one, a CUDA C++ op of the same formula (benchmarks/bench_softmax_tl.py races them), and move to
CUDA C++ (`kernelgen add ... --backend cuda`) only when the numbers say so.
"""

from __future__ import annotations

import torch
from torch.library import wrap_triton

# The eager fast path, shared by the package's Triton ops (../_triton_eager.py says when and why): the
# public function launches the kernel itself when the registered op would do exactly that and nothing
# else; torch.ops.myteam.softmax_tl always goes through the op.
from .._triton_eager import eager_launch_ok as _eager_launch_ok

try:
    import triton
    import triton.language as tl
    from triton.language.extra import libdevice  # noqa: F401 (the kernel body may call it)
except ImportError:  # a CPU-only install: the CPU implementation below still works
    triton = None

#: True when the CUDA implementation can run (triton is installed).
TRITON_AVAILABLE: bool = triton is not None

__all__ = ["softmax_tl", "reference", "TRITON_AVAILABLE"]

_OP = "myteam::softmax_tl"
_DTYPES = (torch.float32, torch.float64, torch.float16, torch.bfloat16, )


def softmax_tl(x: torch.Tensor) -> torch.Tensor:
    """Compute ``exp(x - max(x)) / sum(exp(x - max(x)))`` over each row (the last dimension).

    Args:
        x: a tensor of dtype float32, float64, float16, bfloat16, with at least one dimension; its last
            dimension is a row, every leading one a batch of rows.
        Any strides are accepted.

    Returns:
        A new contiguous tensor with the shape, dtype and device of x. Reductions and
        arithmetic run in float32 for float16 and bfloat16 (float64 for float64); the result is
        rounded once.

    Differentiable with respect to every argument. Raises RuntimeError, naming the argument, on a
    device, shape or dtype mismatch or an unsupported dtype, and TypeError for a non-tensor.
    """
    for name, t in (("x", x), ):
        if not isinstance(t, torch.Tensor):
            raise TypeError(f"softmax_tl: {name} must be a torch.Tensor, got {type(t).__name__}")
        if t.layout != torch.strided:
            raise RuntimeError(f"softmax_tl: {name} must be a dense tensor, got layout {t.layout}")
    if _eager_launch_ok(x):
        return _softmax_tl_launch(x, _softmax_tl_kernel, _softmax_tl_long_kernel)  # see "the eager fast path" below
    return torch.ops.myteam.softmax_tl.default(x)


def reference(x: torch.Tensor) -> torch.Tensor:
    """The specification of softmax_tl in plain PyTorch: ``exp(x - max(x)) / sum(exp(x - max(x)))``.

    The tests compare the kernel against it, the benchmark races against it, and the default
    backward is derived from it; it is also the CPU implementation. Keep it in step with the kernel
    (_softmax_tl_kernel below). Each reduction is computed once, over the last dimension.
    """
    _r0 = torch.amax(x, dim=-1, keepdim=True)  # max(x)
    _r1 = torch.sum(torch.exp(x - _r0), dim=-1, keepdim=True)  # sum(exp(x - max(x)))
    return torch.exp(x - _r0) / _r1


def _check_inputs(x: torch.Tensor) -> None:
    # The same checks, and the same messages, as the CUDA C++ backend's.
    if x.dtype not in _DTYPES:
        raise RuntimeError(f"softmax_tl: x has dtype {x.dtype}, but softmax_tl supports float32, float64, float16, bfloat16")
    if x.dim() == 0:
        raise RuntimeError("softmax_tl: x is a 0-dimensional tensor; it needs at least one dimension (the row)")


# ---- the kernels --------------------------------------------------------------------------------
# One program per row. Rows of up to _MAX_BLOCK elements are loaded whole into registers (BLOCK, the
# next power of two, lanes; the mask covers the rest); every reduction and the output then work on
# them, so each element is read from memory once. Longer rows take _softmax_tl_long_kernel, which loops
# over the row in chunks, once per reduction and once for the output. Row offsets are int64: row *
# cols passes 2**31 on large tensors. Reductions run in the op-math dtype ACC (float32 for the half
# types, float64 for float64), in a fixed order: the results are the same on every run.
if TRITON_AVAILABLE:

    @triton.jit
    def _max_nan(lhs, rhs):
        # torch.amax propagates NaN; tl.max would drop it.
        return tl.maximum(lhs, rhs, propagate_nan=tl.PropagateNan.ALL)

    @triton.jit
    def _min_nan(lhs, rhs):
        return tl.minimum(lhs, rhs, propagate_nan=tl.PropagateNan.ALL)

    @triton.jit
    def _softmax_tl_kernel(x_ptr, out_ptr, cols, BLOCK: tl.constexpr, ACC: tl.constexpr):
        base = tl.program_id(0).to(tl.int64) * cols
        offsets = tl.arange(0, BLOCK)
        mask = offsets < cols
        x = tl.load(x_ptr + base + offsets, mask=mask, other=0.0).to(ACC)
        # ---- EDIT HERE: the kernel body (keep reference() above in step) ----------------------------
        # Each reduction over the row's lanes; masked lanes hold the reduction's identity.
        _r0 = tl.reduce(tl.where(mask, x, float("-inf")), 0, _max_nan)  # max(x)
        _r1 = tl.sum(tl.where(mask, tl.exp(x - _r0), 0.0), axis=0)  # sum(exp(x - max(x)))
        result = tl.exp(x - _r0) / _r1
        # ---- end of EDIT HERE ---------------------------------------------------------------------------
        tl.store(out_ptr + base + offsets, result.to(out_ptr.dtype.element_ty), mask=mask)

    @triton.jit
    def _softmax_tl_long_kernel(x_ptr, out_ptr, cols, BLOCK: tl.constexpr, ACC: tl.constexpr):
        base = tl.program_id(0).to(tl.int64) * cols
        # ---- EDIT HERE: the kernel body, in passes over the row (keep it equal to the one above) -----
        acc = tl.full((BLOCK,), float("-inf"), ACC)  # max(x): lane-wise partials, then one reduction
        for start in range(0, cols, BLOCK):
            offsets = start + tl.arange(0, BLOCK)
            mask = offsets < cols
            x = tl.load(x_ptr + base + offsets, mask=mask, other=0.0).to(ACC)
            acc = _max_nan(acc, tl.where(mask, x, float("-inf")))
        _r0 = tl.reduce(acc, 0, _max_nan)
        acc = tl.full((BLOCK,), 0.0, ACC)  # sum(exp(x - max(x))): lane-wise partials, then one reduction
        for start in range(0, cols, BLOCK):
            offsets = start + tl.arange(0, BLOCK)
            mask = offsets < cols
            x = tl.load(x_ptr + base + offsets, mask=mask, other=0.0).to(ACC)
            acc += tl.where(mask, tl.exp(x - _r0), 0.0)
        _r1 = tl.sum(acc, axis=0)
        for start in range(0, cols, BLOCK):
            offsets = start + tl.arange(0, BLOCK)
            mask = offsets < cols
            x = tl.load(x_ptr + base + offsets, mask=mask, other=0.0).to(ACC)
            result = tl.exp(x - _r0) / _r1
            tl.store(out_ptr + base + offsets, result.to(out_ptr.dtype.element_ty), mask=mask)
        # ---- end of EDIT HERE ---------------------------------------------------------------------------


# Launch shape, fixed rather than autotuned (triton.autotune would stall the first call of every
# new row length and cannot run inside CUDA graph capture): rows of up to _MAX_BLOCK elements in
# registers, at about 16 elements per thread (_num_warps); longer rows in chunks of _LONG_BLOCK.
_MAX_BLOCK = 16384
_LONG_BLOCK = 4096


def _num_warps(block: int) -> int:
    return max(4, min(16, block // 512))


# ---- registration -------------------------------------------------------------------------------
# triton_op (not custom_op) makes the op's body visible to torch.compile: Inductor traces into it and
# sees the Triton kernels (launched through wrap_triton) instead of an opaque call. It also uses the
# body, run on fake tensors, as the op's fake implementation, so no register_fake is needed.
@torch.library.triton_op(_OP, mutates_args=())
def _softmax_tl_impl(x: torch.Tensor) -> torch.Tensor:
    if x.device.type != "cuda":
        # Tracing on CPU (opcheck, torch.compile) runs this body too: stay off the GPU path.
        return _softmax_tl_cpu(x)
    if not TRITON_AVAILABLE:
        raise RuntimeError("softmax_tl: the CUDA implementation needs triton (pip install triton)")
    return _softmax_tl_launch(x, wrap_triton(_softmax_tl_kernel), wrap_triton(_softmax_tl_long_kernel))


def _softmax_tl_launch(x: torch.Tensor, kernel, long_kernel) -> torch.Tensor:
    """The CUDA implementation: the checks, then one launch of ``kernel`` (rows in registers) or
    ``long_kernel`` (longer rows), which are the @triton.jit functions themselves on the eager fast
    path and wrap_triton of them inside the registered op (where torch.compile must see the launch)."""
    _check_inputs(x)
    # Row-major data; the *_contig locals keep any copies alive during the launch.
    x_contig = x.contiguous()
    out = torch.empty(x.shape, dtype=x.dtype, device=x.device)
    cols = x.shape[-1]
    if out.numel() == 0:
        return out
    rows = out.numel() // cols
    acc = tl.float64 if out.dtype == torch.float64 else tl.float32
    if cols <= _MAX_BLOCK:
        block = triton.next_power_of_2(cols)
    else:
        kernel, block = long_kernel, _LONG_BLOCK
    # The inputs' GPU must be current: Triton launches on the current device, on its current stream
    # (the caller's stream, so CUDA graphs and side streams work). Switching only when needed saves
    # host time, which is what bounds a launch of a few microseconds of work.
    if x.device.index == torch.cuda.current_device():
        kernel[(rows,)](x_contig, out, cols, BLOCK=block, ACC=acc, num_warps=_num_warps(block))
    else:
        with torch.cuda.device(x.device):
            kernel[(rows,)](x_contig, out, cols, BLOCK=block, ACC=acc, num_warps=_num_warps(block))
    return out


# The CPU implementation: the reference, in op-math precision, rounded once.
@torch.library.register_kernel(_OP, "cpu")
def _softmax_tl_cpu(x: torch.Tensor) -> torch.Tensor:
    _check_inputs(x)
    dtype = x.dtype
    opmath = torch.float32 if dtype in (torch.float16, torch.bfloat16) else dtype
    out = torch.empty(x.shape, dtype=dtype, device=x.device)
    if out.numel() == 0:
        return out
    return out.copy_(reference(x.contiguous().to(opmath)))


# ---- autograd ---------------------------------------------------------------------------------
def _setup_context(ctx, inputs, output) -> None:
    # The backward needs the inputs (not the output) to evaluate the derivative.
    ctx.save_for_backward(*inputs)


def _backward(ctx, grad_out: torch.Tensor):
    # ---- AUTOGRAD STUB ------------------------------------------------------------------------
    # The default backward is the vector-Jacobian product of reference(), computed by
    # torch.func.vjp in op-math precision (float32 for float16/bfloat16 inputs). It is correct for
    # any expression kernelgen accepts, and gradcheck in the tests proves it, but it runs several
    # PyTorch kernels. When the backward matters for speed, write a second Triton kernel for it.
    # ------------------------------------------------------------------------------------------
    saved = ctx.saved_tensors
    dtype = saved[0].dtype
    opmath = torch.float32 if dtype in (torch.float16, torch.bfloat16) else dtype

    def in_opmath(*xs: torch.Tensor) -> torch.Tensor:
        return reference(*(x.to(opmath) for x in xs))

    _, vjp = torch.func.vjp(in_opmath, *saved)
    return vjp(grad_out.to(opmath))


torch.library.register_autograd(_OP, _backward, setup_context=_setup_context)

