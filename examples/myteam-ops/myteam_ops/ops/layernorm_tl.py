"""The Python face of myteam::layernorm_tl on the Triton backend (rowwise): the kernels and their
launcher, the registration (torch.library.triton_op), the CPU implementation, the reference and the
autograd formula. There is no C++: Triton compiles a kernel on its first call for each dtype and
block size (and caches it on disk), so editing this file and re-running the tests is the whole loop.

Why Triton first: write the op in Triton, measure it against torch.compile and, if the package has
one, a CUDA C++ op of the same formula (benchmarks/bench_layernorm_tl.py races them), and move to
CUDA C++ (`kernelgen add ... --backend cuda`) only when the numbers say so.
"""

from __future__ import annotations

import torch
from torch.library import wrap_triton

# The eager fast path, shared by the package's Triton ops (../_triton_eager.py says when and why): the
# public function launches the kernel itself when the registered op would do exactly that and nothing
# else; torch.ops.myteam.layernorm_tl always goes through the op.
from .._triton_eager import eager_launch_ok as _eager_launch_ok

try:
    import triton
    import triton.language as tl
    from triton.language.extra import libdevice  # noqa: F401 (the kernel body may call it)
except ImportError:  # a CPU-only install: the CPU implementation below still works
    triton = None

#: True when the CUDA implementation can run (triton is installed).
TRITON_AVAILABLE: bool = triton is not None

__all__ = ["layernorm_tl", "reference", "TRITON_AVAILABLE"]

_OP = "myteam::layernorm_tl"
_DTYPES = (torch.float32, torch.float64, torch.float16, torch.bfloat16, )


def layernorm_tl(x: torch.Tensor, w: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
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
    for name, t in (("x", x), ("w", w), ("b", b)):
        if not isinstance(t, torch.Tensor):
            raise TypeError(f"layernorm_tl: {name} must be a torch.Tensor, got {type(t).__name__}")
        if t.layout != torch.strided:
            raise RuntimeError(f"layernorm_tl: {name} must be a dense tensor, got layout {t.layout}")
    if _eager_launch_ok(x, w, b):
        return _layernorm_tl_launch(x, w, b, _layernorm_tl_kernel, _layernorm_tl_long_kernel)  # see "the eager fast path" below
    return torch.ops.myteam.layernorm_tl.default(x, w, b)


def reference(x: torch.Tensor, w: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """The specification of layernorm_tl in plain PyTorch: ``(x - mean(x)) * rsqrt(mean((x - mean(x)) ** 2.0) + 1e-05) * w + b``.

    The tests compare the kernel against it, the benchmark races against it, and the default
    backward is derived from it; it is also the CPU implementation. Keep it in step with the kernel
    (_layernorm_tl_kernel below). Each reduction is computed once, over the last dimension.
    """
    _r0 = torch.mean(x, dim=-1, keepdim=True)  # mean(x)
    _r1 = torch.mean((x - _r0) ** 2.0, dim=-1, keepdim=True)  # mean((x - mean(x)) ** 2.0)
    return (x - _r0) * torch.rsqrt(_r1 + 1e-05) * w + b


def _check_inputs(x: torch.Tensor, w: torch.Tensor, b: torch.Tensor) -> None:
    # The same checks, and the same messages, as the CUDA C++ backend's.
    if x.dtype not in _DTYPES:
        raise RuntimeError(f"layernorm_tl: x has dtype {x.dtype}, but layernorm_tl supports float32, float64, float16, bfloat16")
    if x.dim() == 0:
        raise RuntimeError("layernorm_tl: x is a 0-dimensional tensor; it needs at least one dimension (the row)")
    if w.dim() != 1 or w.shape[0] != x.shape[-1]:
        raise RuntimeError(f"layernorm_tl: weight w has shape {list(w.shape)} but must be [{x.shape[-1]}]: 1-D, one value per element of a row of x (shape {list(x.shape)})")
    if w.dtype != x.dtype:
        raise RuntimeError(f"layernorm_tl: weight w has dtype {w.dtype} but x has dtype {x.dtype}; weights must have the inputs' dtype")
    if w.device != x.device:
        raise RuntimeError(f"layernorm_tl: weight w is on {w.device} but x is on {x.device}; weights must be on the inputs' device")
    if b.dim() != 1 or b.shape[0] != x.shape[-1]:
        raise RuntimeError(f"layernorm_tl: weight b has shape {list(b.shape)} but must be [{x.shape[-1]}]: 1-D, one value per element of a row of x (shape {list(x.shape)})")
    if b.dtype != x.dtype:
        raise RuntimeError(f"layernorm_tl: weight b has dtype {b.dtype} but x has dtype {x.dtype}; weights must have the inputs' dtype")
    if b.device != x.device:
        raise RuntimeError(f"layernorm_tl: weight b is on {b.device} but x is on {x.device}; weights must be on the inputs' device")


# ---- the kernels --------------------------------------------------------------------------------
# One program per row. Rows of up to _MAX_BLOCK elements are loaded whole into registers (BLOCK, the
# next power of two, lanes; the mask covers the rest); every reduction and the output then work on
# them, so each element is read from memory once. Longer rows take _layernorm_tl_long_kernel, which loops
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
    def _layernorm_tl_kernel(x_ptr, w_ptr, b_ptr, out_ptr, cols, BLOCK: tl.constexpr, ACC: tl.constexpr):
        base = tl.program_id(0).to(tl.int64) * cols
        offsets = tl.arange(0, BLOCK)
        mask = offsets < cols
        x = tl.load(x_ptr + base + offsets, mask=mask, other=0.0).to(ACC)
        # ---- EDIT HERE: the kernel body (keep reference() above in step) ----------------------------
        # Each reduction over the row's lanes; masked lanes hold the reduction's identity.
        _r0 = tl.sum(tl.where(mask, x, 0.0), axis=0) / cols  # mean(x)
        _r1 = tl.sum(tl.where(mask, (x - _r0) * (x - _r0), 0.0), axis=0) / cols  # mean((x - mean(x)) ** 2.0)
        # Weights only the output reads are loaded here, after the reductions: loaded with the row, they
        # would hold registers through every reduction (a LayerNorm at rows of 16384 in bfloat16: 97
        # registers, one 512-thread program per SM, 0.76x of torch.compile; loaded here 63 registers).
        w = tl.load(w_ptr + offsets, mask=mask, other=0.0).to(ACC)
        b = tl.load(b_ptr + offsets, mask=mask, other=0.0).to(ACC)
        result = (x - _r0) * tl.rsqrt(_r1 + tl.full((), 1e-05, ACC)) * w + b
        # ---- end of EDIT HERE ---------------------------------------------------------------------------
        tl.store(out_ptr + base + offsets, result.to(out_ptr.dtype.element_ty), mask=mask)

    @triton.jit
    def _layernorm_tl_long_kernel(x_ptr, w_ptr, b_ptr, out_ptr, cols, BLOCK: tl.constexpr, ACC: tl.constexpr):
        base = tl.program_id(0).to(tl.int64) * cols
        # ---- EDIT HERE: the kernel body, in passes over the row (keep it equal to the one above) -----
        acc = tl.full((BLOCK,), 0.0, ACC)  # mean(x): lane-wise partials, then one reduction
        for start in range(0, cols, BLOCK):
            offsets = start + tl.arange(0, BLOCK)
            mask = offsets < cols
            x = tl.load(x_ptr + base + offsets, mask=mask, other=0.0).to(ACC)
            acc += tl.where(mask, x, 0.0)
        _r0 = tl.sum(acc, axis=0) / cols
        acc = tl.full((BLOCK,), 0.0, ACC)  # mean((x - mean(x)) ** 2.0): lane-wise partials, then one reduction
        for start in range(0, cols, BLOCK):
            offsets = start + tl.arange(0, BLOCK)
            mask = offsets < cols
            x = tl.load(x_ptr + base + offsets, mask=mask, other=0.0).to(ACC)
            acc += tl.where(mask, (x - _r0) * (x - _r0), 0.0)
        _r1 = tl.sum(acc, axis=0) / cols
        for start in range(0, cols, BLOCK):
            offsets = start + tl.arange(0, BLOCK)
            mask = offsets < cols
            x = tl.load(x_ptr + base + offsets, mask=mask, other=0.0).to(ACC)
            w = tl.load(w_ptr + offsets, mask=mask, other=0.0).to(ACC)
            b = tl.load(b_ptr + offsets, mask=mask, other=0.0).to(ACC)
            result = (x - _r0) * tl.rsqrt(_r1 + tl.full((), 1e-05, ACC)) * w + b
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
def _layernorm_tl_impl(x: torch.Tensor, w: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    if x.device.type != "cuda":
        # Tracing on CPU (opcheck, torch.compile) runs this body too: stay off the GPU path.
        return _layernorm_tl_cpu(x, w, b)
    if not TRITON_AVAILABLE:
        raise RuntimeError("layernorm_tl: the CUDA implementation needs triton (pip install triton)")
    return _layernorm_tl_launch(x, w, b, wrap_triton(_layernorm_tl_kernel), wrap_triton(_layernorm_tl_long_kernel))


def _layernorm_tl_launch(x: torch.Tensor, w: torch.Tensor, b: torch.Tensor, kernel, long_kernel) -> torch.Tensor:
    """The CUDA implementation: the checks, then one launch of ``kernel`` (rows in registers) or
    ``long_kernel`` (longer rows), which are the @triton.jit functions themselves on the eager fast
    path and wrap_triton of them inside the registered op (where torch.compile must see the launch)."""
    _check_inputs(x, w, b)
    # Row-major data; the *_contig locals keep any copies alive during the launch.
    x_contig = x.contiguous()
    w_contig = w.contiguous()
    b_contig = b.contiguous()
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
        kernel[(rows,)](x_contig, w_contig, b_contig, out, cols, BLOCK=block, ACC=acc, num_warps=_num_warps(block))
    else:
        with torch.cuda.device(x.device):
            kernel[(rows,)](x_contig, w_contig, b_contig, out, cols, BLOCK=block, ACC=acc, num_warps=_num_warps(block))
    return out


# The CPU implementation: the reference, in op-math precision, rounded once.
@torch.library.register_kernel(_OP, "cpu")
def _layernorm_tl_cpu(x: torch.Tensor, w: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    _check_inputs(x, w, b)
    dtype = x.dtype
    opmath = torch.float32 if dtype in (torch.float16, torch.bfloat16) else dtype
    out = torch.empty(x.shape, dtype=dtype, device=x.device)
    if out.numel() == 0:
        return out
    return out.copy_(reference(x.contiguous().to(opmath), w.contiguous().to(opmath), b.contiguous().to(opmath)))


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

