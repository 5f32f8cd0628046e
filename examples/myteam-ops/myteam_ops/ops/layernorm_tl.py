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
from .._triton_eager import eager_autograd_ok as _eager_autograd_ok
from .._triton_eager import autograd_records as _autograd_records
# The grid's and the block's arithmetic on the host, in plain integers: triton.cdiv and next_power_of_2,
# constexpr functions, cost microseconds a call from Python (../_triton_eager.py).
from .._triton_eager import cdiv as _cdiv
from .._triton_eager import next_power_of_2 as _next_power_of_2

# The warps for the longest rows the rows kernel holds, shared by the package's Triton rowwise ops.
from .._triton_rowwise import rows_warps as _rows_warps
# How the backward's register kernels launch (warps, programs, and whether their rows pipeline), or None where
# they spill past the tolerance and the next kernel takes the rows.
from .._triton_rowwise import backward_launch as _backward_launch
# The autograd formula of the training forward (layernorm_tl_train, below) and the check of the per-row values it saves,
# shared by the package's Triton rowwise ops.
from .._triton_rowwise import check_known as _check_known
from .._triton_rowwise import register_training_autograd as _register_training_autograd

# The weights' kernel's tile, how it splits the rows, and the column sum, shared by the package's Triton rowwise ops.
from .._triton_rowwise import column_sum as _column_sum
from .._triton_rowwise import splits as _splits
from .._triton_rowwise import weight_tile as _weight_tile

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
        return _layernorm_tl_launch(x, w, b, _layernorm_tl_kernel, _layernorm_tl_long_kernel)[0]  # see "the eager fast path" below
    if _eager_autograd_ok(x, w, b):
        return _LayernormTlAutograd.apply(x, w, b)  # the eager training path, below
    if _autograd_records(x, w, b):
        # Autograd records the call through the dispatcher (torch.compile, a mode): the op that also returns the
        # per-row values its backward reads (layernorm_tl_train, below).
        return torch.ops.myteam.layernorm_tl_train.default(x, w, b)[0]
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
# over the row in chunks, in passes: reductions that read no result of each other share a pass, a sum of
# exp(f - max(f)) shares its maximum's (the online softmax), and one more pass writes the output. For the
# 2-byte types its passes before the last load the row with evict_last (KEEP), so that the L2 cache still
# holds it for the next pass, and the last pass and the output's stores use evict_first (STREAM), so that
# they do not push out rows still to be read (_long_forward). Row offsets are int64: row * cols passes
# 2**31 on large tensors. Reductions run in the op-math dtype ACC (float32 for the half types, float64 for
# float64), in a fixed order: the results are the same on every run.
if TRITON_AVAILABLE:

    @triton.jit
    def _max_nan(lhs, rhs):
        # torch.amax propagates NaN; tl.max would drop it.
        return tl.maximum(lhs, rhs, propagate_nan=tl.PropagateNan.ALL)

    @triton.jit
    def _min_nan(lhs, rhs):
        return tl.minimum(lhs, rhs, propagate_nan=tl.PropagateNan.ALL)

    @triton.jit(do_not_specialize=["_save"])
    def _layernorm_tl_kernel(x_ptr, w_ptr, b_ptr, out_ptr, cols, _stats_ptr, _save, BLOCK: tl.constexpr, ACC: tl.constexpr):
        base = tl.program_id(0).to(tl.int64) * cols
        offsets = tl.arange(0, BLOCK)
        mask = offsets < cols
        x = tl.load(x_ptr + base + offsets, mask=mask, other=0.0).to(ACC)
        # ---- EDIT HERE: the kernel body (keep reference() above in step) ----------------------------
        # Each reduction over the row's lanes; masked lanes hold the reduction's identity.
        _r0 = tl.sum(tl.where(mask, x, 0.0), axis=0) / cols  # mean(x)
        _r1 = tl.sum(tl.where(mask, (x - _r0) * (x - _r0), 0.0), axis=0) / cols  # mean((x - mean(x)) ** 2.0)
        if _save != 0:
            # The per-row values the backward reads, for the eager training path's backward (see the backward).
            # _save is a run-time flag, never a compile-time constant: the output's bits are the same either way.
            tl.store(_stats_ptr + tl.program_id(0).to(tl.int64) * 2 + 0, _r0)
            tl.store(_stats_ptr + tl.program_id(0).to(tl.int64) * 2 + 1, _r1)
        # Weights only the output reads are loaded here, after the reductions: loaded with the row, they
        # would hold registers through every reduction (a LayerNorm at rows of 16384 in bfloat16: 97
        # registers, one 512-thread program per SM, 0.76x of torch.compile; loaded here 63 registers).
        w = tl.load(w_ptr + offsets, mask=mask, other=0.0).to(ACC)
        b = tl.load(b_ptr + offsets, mask=mask, other=0.0).to(ACC)
        result = (x - _r0) * tl.rsqrt(_r1 + tl.full((), 1e-05, ACC)) * w + b
        # ---- end of EDIT HERE ---------------------------------------------------------------------------
        tl.store(out_ptr + base + offsets, result.to(out_ptr.dtype.element_ty), mask=mask)

    @triton.jit(do_not_specialize=["_save"])
    def _layernorm_tl_long_kernel(x_ptr, w_ptr, b_ptr, out_ptr, cols, _stats_ptr, _save, BLOCK: tl.constexpr, ACC: tl.constexpr,
                    KEEP: tl.constexpr, STREAM: tl.constexpr):
        base = tl.program_id(0).to(tl.int64) * cols
        # ---- EDIT HERE: the kernel body, in passes over the row (keep it equal to the one above) -----
        _acc0 = tl.full((BLOCK,), 0.0, ACC)  # mean(x): lane-wise partials, then one reduction
        for start in range(0, cols, BLOCK):
            offsets = start + tl.arange(0, BLOCK)
            mask = offsets < cols
            x = tl.load(x_ptr + base + offsets, mask=mask, other=0.0, eviction_policy=KEEP).to(ACC)
            _acc0 += tl.where(mask, x, 0.0)
        _r0 = tl.sum(_acc0, axis=0) / cols
        _acc1 = tl.full((BLOCK,), 0.0, ACC)  # mean((x - mean(x)) ** 2.0): lane-wise partials, then one reduction
        for start in range(0, cols, BLOCK):
            offsets = start + tl.arange(0, BLOCK)
            mask = offsets < cols
            x = tl.load(x_ptr + base + offsets, mask=mask, other=0.0, eviction_policy=KEEP).to(ACC)
            _acc1 += tl.where(mask, (x - _r0) * (x - _r0), 0.0)
        _r1 = tl.sum(_acc1, axis=0) / cols
        if _save != 0:
            # The per-row values the backward reads, for the eager training path's backward (see the backward).
            # _save is a run-time flag, never a compile-time constant: the output's bits are the same either way.
            tl.store(_stats_ptr + tl.program_id(0).to(tl.int64) * 2 + 0, _r0)
            tl.store(_stats_ptr + tl.program_id(0).to(tl.int64) * 2 + 1, _r1)
        for start in range(0, cols, BLOCK):
            offsets = start + tl.arange(0, BLOCK)
            mask = offsets < cols
            x = tl.load(x_ptr + base + offsets, mask=mask, other=0.0, eviction_policy=STREAM).to(ACC)
            w = tl.load(w_ptr + offsets, mask=mask, other=0.0).to(ACC)
            b = tl.load(b_ptr + offsets, mask=mask, other=0.0).to(ACC)
            result = (x - _r0) * tl.rsqrt(_r1 + tl.full((), 1e-05, ACC)) * w + b
            tl.store(out_ptr + base + offsets, result.to(out_ptr.dtype.element_ty), mask=mask, eviction_policy=STREAM)
        # ---- end of EDIT HERE ---------------------------------------------------------------------------


# Launch shape, fixed rather than autotuned (triton.autotune would stall the first call of every
# new row length and cannot run inside CUDA graph capture): rows of up to _MAX_BLOCK elements in
# registers, at 16 elements per thread from 2048 on (_num_warps); longer rows in chunks of
# _long_forward(dtype) elements.
# A float32 or float64 row of 16384 takes 32 warps, so that a thread still holds 16 elements (64 bytes
# in flight): at 16 warps it holds 32, and an op with a call in and out of its reduction takes 73-128
# registers, one program an SM (on an H100: 74-83% of a copy, against 99-101% at 32 warps). A float16 or
# bfloat16 row keeps 16 warps, the same 64 bytes a thread (LayerNorm at 32 warps: 74-77% against 97%).
_MAX_BLOCK = 16384
_LONG_BLOCK = 4096
# The forward's chunks hold 16 KiB of each input, and at least _LONG_BLOCK elements: 8192 of a 2-byte
# type, at 16 warps. On an H100, at 2^26 bfloat16 elements in rows of 65536 and 262144, expressions run
# a median 1.18x faster with chunks of 8192 and the cache hints than with chunks of 4096 and no hints
# (nearly all faster, none more than 3% slower); the hints alone are a median 1.04x of that. float32 keeps
# chunks of 4096 and no hints: with them, one-reduction expressions run 8-14% slower at rows of 262144.
_LONG_FORWARD_BYTES = 16384


def _long_forward(dtype: torch.dtype) -> tuple[int, dict[str, str]]:
    """The long forward kernel's chunk (elements) and its cache hints (KEEP, STREAM) for rows of ``dtype``."""
    return max(_LONG_BLOCK, _LONG_FORWARD_BYTES // dtype.itemsize), _cache_hints(dtype)


def _cache_hints(dtype: torch.dtype) -> dict[str, str]:
    """The long kernels' cache hints (KEEP: the passes before the last, STREAM: the last and the stores): the
    2-byte types keep the row in L2 between passes; float32 and float64 take none."""
    if dtype.itemsize == 2:
        return {"KEEP": "evict_last", "STREAM": "evict_first"}
    return {"KEEP": "", "STREAM": ""}


def _num_warps(block: int, most: int = 16) -> int:
    return max(4, min(most, block // 512))


def _forward_warps(block: int, dtype: torch.dtype) -> int:
    return _num_warps(block, 32 if dtype.itemsize >= 4 else 16)


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
    return _layernorm_tl_launch(x, w, b, wrap_triton(_layernorm_tl_kernel), wrap_triton(_layernorm_tl_long_kernel))[0]


# layernorm_tl_train: the op as autograd records it where the eager training path does not serve the call (under
# torch.compile, under a TorchFunctionMode or TorchDispatchMode): the output, and the forward's per-row values the
# backward reads (2 a row, in op math), which its autograd formula saves and passes to layernorm_tl_backward as _known.
# layernorm_tl itself returns the output alone: inference, and callers of torch.ops.myteam.layernorm_tl, take it.
@torch.library.triton_op(_OP + "_train", mutates_args=(), schema="(Tensor x, Tensor w, Tensor b) -> (Tensor, Tensor)")
def _layernorm_tl_train_impl(x: torch.Tensor, w: torch.Tensor, b: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    if x.device.type != "cuda":
        return _layernorm_tl_train_cpu(x, w, b)
    if not TRITON_AVAILABLE:
        raise RuntimeError("layernorm_tl: the CUDA implementation needs triton (pip install triton)")
    out, stats = _layernorm_tl_launch(x, w, b, wrap_triton(_layernorm_tl_kernel), wrap_triton(_layernorm_tl_long_kernel), save=True)
    assert stats is not None  # save=True always returns the per-row values
    return out, stats


def _layernorm_tl_launch(x: torch.Tensor, w: torch.Tensor, b: torch.Tensor, kernel, long_kernel, save: bool = False) -> tuple[torch.Tensor, torch.Tensor | None]:
    """The CUDA implementation: the checks, then one launch of ``kernel`` (rows in registers) or
    ``long_kernel`` (longer rows), which are the @triton.jit functions themselves on the eager fast
    path and wrap_triton of them inside the registered op (where torch.compile must see the launch).
    Returns the output and, with ``save``, the per-row values the backward reads (rows, 2), in op math
    (the eager training path saves them for its backward); else None."""
    _check_inputs(x, w, b)
    # Row-major data; the *_contig locals keep any copies alive during the launch.
    x_contig = x.contiguous()
    w_contig = w.contiguous()
    b_contig = b.contiguous()
    out = torch.empty(x.shape, dtype=x.dtype, device=x.device)
    cols = x.shape[-1]
    rows = out.numel() // cols if cols else 0
    stats = torch.empty((rows, 2), dtype=torch.float64 if out.dtype == torch.float64 else torch.float32,
                        device=out.device) if save else None
    if out.numel() == 0:
        return out, stats
    acc = tl.float64 if out.dtype == torch.float64 else tl.float32
    hints = {}
    warps: int | None = None
    if cols <= _MAX_BLOCK:
        block = _next_power_of_2(cols)
        warps = _forward_warps(block, out.dtype)
        if block == _MAX_BLOCK and isinstance(cols, int):
            # The longest rows: 32 warps where 16 leave room for only one program an SM and 32 spill
            # little, and the long kernel where both spill more (_rows_warps), read from the kernel
            # compiled (once, not launched) for these dtypes. float32 and float64 start at 32 warps: the
            # long kernel takes their rows where those spill more. Under torch.compile's dynamic shapes,
            # where the row length is a symbol, the warps stay as they are.
            warps = _rows_warps(_layernorm_tl_kernel, [x.dtype, w.dtype, b.dtype, out.dtype, cols, out.dtype, 0],
                                dict(BLOCK=block, ACC=acc, num_warps=warps), x.device, 32)
    if cols > _MAX_BLOCK or warps is None:
        kernel, (block, hints) = long_kernel, _long_forward(out.dtype)
        warps = _forward_warps(block, out.dtype)
    # The inputs' GPU must be current: Triton launches on the current device, on its current stream
    # (the caller's stream, so CUDA graphs and side streams work). Switching only when needed saves
    # host time, which is what bounds a launch of a few microseconds of work.
    # Without save, the kernels' _stats_ptr is out, which they never write with _save 0.
    if x.device.index == torch.cuda.current_device():
        kernel[(rows,)](x_contig, w_contig, b_contig, out, cols, out if stats is None else stats, int(save), BLOCK=block, ACC=acc,
                        num_warps=warps, **hints)
    else:
        with torch.cuda.device(x.device):
            kernel[(rows,)](x_contig, w_contig, b_contig, out, cols, out if stats is None else stats, int(save), BLOCK=block, ACC=acc,
                            num_warps=warps, **hints)
    return out, stats


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


@torch.library.register_kernel(_OP + "_train", "cpu")
def _layernorm_tl_train_cpu(x: torch.Tensor, w: torch.Tensor, b: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    # The output as layernorm_tl's CPU implementation computes it; the per-row values are reference()'s reductions
    # in op math, as the kernels save them (the CPU backward computes them again and does not read them).
    out = _layernorm_tl_cpu(x, w, b)
    opmath = torch.float32 if out.dtype in (torch.float16, torch.bfloat16) else out.dtype
    cols = x.shape[-1]
    rows = out.numel() // cols if cols else 0
    if out.numel() == 0:
        return out, torch.empty((rows, 2), dtype=opmath, device=out.device)
    x = x.to(opmath)
    w = w.to(opmath)
    b = b.to(opmath)
    _r0 = torch.mean(x, dim=-1, keepdim=True)  # mean(x)
    _r1 = torch.mean((x - _r0) ** 2.0, dim=-1, keepdim=True)  # mean((x - mean(x)) ** 2.0)
    shape = (*x.shape[:-1], 1)
    return out, torch.cat([torch.broadcast_to(_r0, shape), torch.broadcast_to(_r1, shape)], dim=-1).reshape(rows, 2)


# ---- the backward -------------------------------------------------------------------------------
# layernorm_tl_backward: the gradient of every input asked for and of every weight, from the derivatives kernelgen
# wrote from the expression (in the kernels and the CPU implementation below). layernorm_tl's autograd formula saves
# nothing but the arguments: each row's per-row values (the forward's reductions and the backward's own) are computed
# again from the row, which costs arithmetic, not memory traffic, where the row stays on chip.
# Rows longer than that are read once more for every pass that computes them, so a forward that autograd records
# saves the forward's values the backward reads (2 a row: _layernorm_tl_launch's save, called by the eager
# training path and by layernorm_tl_train), passes them as _known, and the long
# kernel loads them (KNOWN) and takes passes only for the backward's own reductions: 1 instead of 2.
def _check_backward_inputs(_grad: torch.Tensor, x: torch.Tensor, w: torch.Tensor, b: torch.Tensor, _needs: list[bool]) -> None:
    # The forward's checks, then the output's gradient: the inputs' shape, dtype and device.
    _check_inputs(x, w, b)
    if _grad.device != x.device or _grad.dtype != x.dtype or _grad.shape != x.shape:
        raise RuntimeError(f"layernorm_tl_backward: grad is {_grad.dtype} of shape {list(_grad.shape)} on {_grad.device}, "
                           f"but the inputs are {x.dtype} of shape {list(x.shape)} on {x.device}")
    if len(_needs) != 3:
        raise RuntimeError(f"layernorm_tl_backward: got {len(_needs)} flags in _needs, but layernorm_tl has 3 arguments (one flag each: the inputs, then the weights)")


if TRITON_AVAILABLE:

    # A row of up to _MAX_BACKWARD_BLOCK elements stays in registers (BLOCK lanes) while the kernel computes the
    # per-row values, then every input's gradient (_layernorm_tl_backward_row). The launch runs one program a row
    # (STAGES=1), or, where one program fills an SM and so leaves it idle while the row's reductions wait on each
    # other, as many programs as the GPU holds, each taking every num_programs-th row from its own index on, at
    # STAGES=2: Triton's software pipeline then copies a program's next row into shared memory (cp.async) while it
    # computes the current one (../_triton_rowwise.py, backward_pipeline). _need<j> is a run-time flag, never a
    # compile-time constant (do_not_specialize): the arithmetic, and with it every gradient's bits, is the same
    # whatever the caller asks for. The row's per-row values go to _stats (rows, 4), where
    # _layernorm_tl_weight_grad_kernel reads them: this kernel serves rows whose weights' sums do not fit on chip
    # (_layernorm_tl_backward_rows_kernel below).
    # The row's math, once for every kernel that holds a row in registers: from the row's values (the gradient,
    # the inputs, the weights), its per-row values (_r<k>: the forward's reductions and the backward's own)
    # and every input's gradient (_d<i>),
    # and each weight's contribution from this row (_dw<j>). Triton inlines it where it is called,
    # and drops what a caller does not use.
    @triton.jit
    def _layernorm_tl_backward_math(_grad, x, w, b, cols, mask, BLOCK: tl.constexpr, ACC: tl.constexpr):
        _n = cols
        # ---- EDIT HERE: the backward's per-row values, then the gradients (keep them the derivatives of reference())
        _a0 = x
        _r0 = tl.sum(tl.where(mask, _a0, 0.0), axis=0) / cols  # mean(x)
        _a1 = (x - _r0) * (x - _r0)
        _r1 = tl.sum(tl.where(mask, _a1, 0.0), axis=0) / cols  # mean((x - mean(x)) ** 2.0)
        _a2 = _grad * w
        _r2 = tl.sum(tl.where(mask, _a2, 0.0), axis=0) / cols  # mean(_grad * w)
        _a3 = _grad * w * (x - _r0)
        _r3 = tl.sum(tl.where(mask, _a3, 0.0), axis=0) / cols  # mean(_grad * w * (x - mean(x)))
        _t0 = tl.rsqrt(_r1 + tl.full((), 1e-05, ACC))
        _t1 = x - _r0
        _d0 = _grad * (_t0 * w) - _t0 * _r2 - (_t0) * (_t0) * (_t0) * _r3 * _t1  # d/dx: _grad * (rsqrt(_r1 + 1e-05) * w) - rsqrt(_r1 + 1e-05) * _r2 - rsqrt(_r1 + 1e-05) ** 3.0 * _r3 * (x - _r0)
        _dw0 = _grad * (_t1 * _t0)  # d/dw: _grad * ((x - _r0) * rsqrt(_r1 + 1e-05))
        _dw1 = _grad  # d/db: _grad
        # ---- end of EDIT HERE ---------------------------------------------------------------------------
        return _r0, _r1, _r2, _r3, _d0, _dw0, _dw1

    @triton.jit
    def _layernorm_tl_backward_row(row, _grad_ptr, x_ptr, _d0_ptr, _stats_ptr, w, b, _need0, cols, offsets, mask, BLOCK: tl.constexpr, ACC: tl.constexpr):
        # The gradients of row `row` (the weights already loaded): _layernorm_tl_backward_kernel's body, inlined where it is called.
        base = tl.cast(row, tl.int64) * cols
        _grad = tl.load(_grad_ptr + base + offsets, mask=mask, other=0.0).to(ACC)
        x = tl.load(x_ptr + base + offsets, mask=mask, other=0.0).to(ACC)
        _r0, _r1, _r2, _r3, _d0, _dw0, _dw1 = _layernorm_tl_backward_math(_grad, x, w, b, cols, mask, BLOCK, ACC)
        if _need0 != 0:
            tl.store(_d0_ptr + base + offsets, _d0.to(_d0_ptr.dtype.element_ty), mask=mask)
        tl.store(_stats_ptr + tl.cast(row, tl.int64) * 4 + 0, _r0)
        tl.store(_stats_ptr + tl.cast(row, tl.int64) * 4 + 1, _r1)
        tl.store(_stats_ptr + tl.cast(row, tl.int64) * 4 + 2, _r2)
        tl.store(_stats_ptr + tl.cast(row, tl.int64) * 4 + 3, _r3)

    @triton.jit(do_not_specialize=["_need0"])
    def _layernorm_tl_backward_kernel(_grad_ptr, x_ptr, w_ptr, b_ptr, _d0_ptr, _stats_ptr, _need0, rows, cols, BLOCK: tl.constexpr, ACC: tl.constexpr,
                    STAGES: tl.constexpr = 1):
        offsets = tl.arange(0, BLOCK)
        mask = offsets < cols
        w = tl.load(w_ptr + offsets, mask=mask, other=0.0).to(ACC)
        b = tl.load(b_ptr + offsets, mask=mask, other=0.0).to(ACC)
        if STAGES == 1:  # one program a row: the launch's grid is the rows
            _layernorm_tl_backward_row(tl.program_id(0), _grad_ptr, x_ptr, _d0_ptr, _stats_ptr, w, b, _need0, cols, offsets, mask, BLOCK, ACC)
        else:  # a program takes every num_programs-th row, the next one's loads in flight while it computes its own
            for row in tl.range(tl.program_id(0), rows, tl.num_programs(0), num_stages=STAGES):
                _layernorm_tl_backward_row(row, _grad_ptr, x_ptr, _d0_ptr, _stats_ptr, w, b, _need0, cols, offsets, mask, BLOCK, ACC)

    # The same, with the weights' gradients summed on chip. A program takes every num_programs-th row from its own
    # index on; the launch runs as many programs as the GPU holds at once (../_triton_rowwise.py, resident). Each
    # adds its rows' contributions to every weight's gradient in registers (_s<j>, a lane a column), so the weights'
    # gradients cost no second read of the rows, and at the end writes its sums to its row of _p<j>; the column sum
    # adds the programs' rows in order. A program's row alone keeps too few bytes in flight (a 2-byte type's
    # especially) for the few programs an SM holds, so the next row's loads are issued before a program computes
    # its own: at STAGES=1 into registers, by the kernel itself; at STAGES=2 (where one program fills an SM:
    # ../_triton_rowwise.py, backward_pipeline) into shared memory (cp.async), by Triton's software pipeline, which
    # spares the registers the next row would hold.
    @triton.jit
    def _layernorm_tl_backward_rows_step(base, _grad, x, w_ptr, b_ptr, _d0_ptr, _s0, _s1, _need0, cols, offsets, mask, BLOCK: tl.constexpr, ACC: tl.constexpr):
        # One row's gradients from its values, loaded: the inputs' stored, the weights' added to the program's sums
        # (_layernorm_tl_backward_rows_kernel's body, inlined where it is called).
        w = tl.load(w_ptr + offsets, mask=mask, other=0.0).to(ACC)
        b = tl.load(b_ptr + offsets, mask=mask, other=0.0).to(ACC)
        _r0, _r1, _r2, _r3, _d0, _dw0, _dw1 = _layernorm_tl_backward_math(_grad, x, w, b, cols, mask, BLOCK, ACC)
        _s0 += tl.where(mask, _dw0, 0.0)  # the program's sum of d/dw
        _s1 += tl.where(mask, _dw1, 0.0)  # the program's sum of d/db
        if _need0 != 0:
            tl.store(_d0_ptr + base + offsets, _d0.to(_d0_ptr.dtype.element_ty), mask=mask)
        return _s0, _s1

    @triton.jit(do_not_specialize=["_need0"])
    def _layernorm_tl_backward_rows_kernel(_grad_ptr, x_ptr, w_ptr, b_ptr, _d0_ptr, _p0_ptr, _p1_ptr, _need0, rows, cols, BLOCK: tl.constexpr, ACC: tl.constexpr,
                    STAGES: tl.constexpr = 1):
        offsets = tl.arange(0, BLOCK)
        mask = offsets < cols
        _s0 = tl.zeros((BLOCK,), ACC)  # the program's rows' sum of d/dw
        _s1 = tl.zeros((BLOCK,), ACC)  # the program's rows' sum of d/db
        if STAGES == 1:  # the next row's loads into registers
            _step = tl.num_programs(0).to(tl.int64) * cols  # from a program's row to its next
            _first = tl.program_id(0).to(tl.int64) * cols
            _next0 = tl.load(_grad_ptr + _first + offsets, mask=mask & (tl.program_id(0) < rows), other=0.0)
            _next1 = tl.load(x_ptr + _first + offsets, mask=mask & (tl.program_id(0) < rows), other=0.0)
            for row in range(tl.program_id(0), rows, tl.num_programs(0)):
                base = tl.cast(row, tl.int64) * cols
                _grad = _next0.to(ACC)
                x = _next1.to(ACC)
                _more = mask & (row + tl.num_programs(0) < rows)
                _next0 = tl.load(_grad_ptr + base + _step + offsets, mask=_more, other=0.0)
                _next1 = tl.load(x_ptr + base + _step + offsets, mask=_more, other=0.0)
                _s0, _s1 = _layernorm_tl_backward_rows_step(base, _grad, x, w_ptr, b_ptr, _d0_ptr, _s0, _s1, _need0, cols, offsets, mask, BLOCK, ACC)
        else:  # the next row's loads into shared memory, by Triton's software pipeline
            for row in tl.range(tl.program_id(0), rows, tl.num_programs(0), num_stages=STAGES):
                base = tl.cast(row, tl.int64) * cols
                _grad = tl.load(_grad_ptr + base + offsets, mask=mask, other=0.0).to(ACC)
                x = tl.load(x_ptr + base + offsets, mask=mask, other=0.0).to(ACC)
                _s0, _s1 = _layernorm_tl_backward_rows_step(base, _grad, x, w_ptr, b_ptr, _d0_ptr, _s0, _s1, _need0, cols, offsets, mask, BLOCK, ACC)
        tl.store(_p0_ptr + tl.program_id(0).to(tl.int64) * cols + offsets, _s0, mask=mask)
        tl.store(_p1_ptr + tl.program_id(0).to(tl.int64) * cols + offsets, _s1, mask=mask)

    # Rows longer than _MAX_BACKWARD_BLOCK: one program a row, in passes over the row in chunks of BLOCK, as the
    # forward's long kernel takes them (reductions that read no result of each other share a pass).
    # A row cannot stay on chip here, so this kernel computes the row's per-row values only and writes them to
    # _stats (rows, 4); _layernorm_tl_weight_grad_kernel then reads the rows once more and computes every
    # element's derivatives once, for the inputs' gradients and the weights' alike. Loads that a pass does not
    # use are dropped by the compiler. The passes before the last load the row with KEEP and the last with
    # STREAM, as the forward's (_long_backward says for which dtypes).
    @triton.jit
    def _layernorm_tl_backward_long_kernel(_grad_ptr, x_ptr, w_ptr, b_ptr, _stats_ptr, cols, _known_ptr, BLOCK: tl.constexpr, ACC: tl.constexpr,
                    KEEP: tl.constexpr, STREAM: tl.constexpr, KNOWN: tl.constexpr):
        row = tl.program_id(0).to(tl.int64)
        base = row * cols
        _n = cols
        # ---- EDIT HERE: the kernel body, in passes over the row (keep it equal to the one above) ---------
        if KNOWN:
            # The forward's per-row values, saved by the training forward (_known, rows x 2): loaded, not
            # computed again, so that only the backward's own reductions take a pass over the row.
            _r0 = tl.load(_known_ptr + row * 2 + 0).to(ACC)  # mean(x)
            _r1 = tl.load(_known_ptr + row * 2 + 1).to(ACC)  # mean((x - mean(x)) ** 2.0)
            _acc2 = tl.full((BLOCK,), 0.0, ACC)  # mean(_grad * w): lane-wise partials, then one reduction
            _acc3 = tl.full((BLOCK,), 0.0, ACC)  # mean(_grad * w * (x - mean(x))): lane-wise partials, then one reduction
            for start in range(0, cols, BLOCK):
                offsets = start + tl.arange(0, BLOCK)
                mask = offsets < cols
                _grad = tl.load(_grad_ptr + base + offsets, mask=mask, other=0.0, eviction_policy=STREAM).to(ACC)
                x = tl.load(x_ptr + base + offsets, mask=mask, other=0.0, eviction_policy=STREAM).to(ACC)
                w = tl.load(w_ptr + offsets, mask=mask, other=0.0).to(ACC)
                b = tl.load(b_ptr + offsets, mask=mask, other=0.0).to(ACC)
                _a2 = _grad * w
                _acc2 += tl.where(mask, _a2, 0.0)
                _a3 = _grad * w * (x - _r0)
                _acc3 += tl.where(mask, _a3, 0.0)
            _r2 = tl.sum(_acc2, axis=0) / cols
            _r3 = tl.sum(_acc3, axis=0) / cols
        else:
            _acc0 = tl.full((BLOCK,), 0.0, ACC)  # mean(x): lane-wise partials, then one reduction
            _acc2 = tl.full((BLOCK,), 0.0, ACC)  # mean(_grad * w): lane-wise partials, then one reduction
            for start in range(0, cols, BLOCK):
                offsets = start + tl.arange(0, BLOCK)
                mask = offsets < cols
                _grad = tl.load(_grad_ptr + base + offsets, mask=mask, other=0.0, eviction_policy=KEEP).to(ACC)
                x = tl.load(x_ptr + base + offsets, mask=mask, other=0.0, eviction_policy=KEEP).to(ACC)
                w = tl.load(w_ptr + offsets, mask=mask, other=0.0).to(ACC)
                b = tl.load(b_ptr + offsets, mask=mask, other=0.0).to(ACC)
                _a0 = x
                _acc0 += tl.where(mask, _a0, 0.0)
                _a2 = _grad * w
                _acc2 += tl.where(mask, _a2, 0.0)
            _r0 = tl.sum(_acc0, axis=0) / cols
            _r2 = tl.sum(_acc2, axis=0) / cols
            _acc1 = tl.full((BLOCK,), 0.0, ACC)  # mean((x - mean(x)) ** 2.0): lane-wise partials, then one reduction
            _acc3 = tl.full((BLOCK,), 0.0, ACC)  # mean(_grad * w * (x - mean(x))): lane-wise partials, then one reduction
            for start in range(0, cols, BLOCK):
                offsets = start + tl.arange(0, BLOCK)
                mask = offsets < cols
                _grad = tl.load(_grad_ptr + base + offsets, mask=mask, other=0.0, eviction_policy=STREAM).to(ACC)
                x = tl.load(x_ptr + base + offsets, mask=mask, other=0.0, eviction_policy=STREAM).to(ACC)
                w = tl.load(w_ptr + offsets, mask=mask, other=0.0).to(ACC)
                b = tl.load(b_ptr + offsets, mask=mask, other=0.0).to(ACC)
                _a1 = (x - _r0) * (x - _r0)
                _acc1 += tl.where(mask, _a1, 0.0)
                _a3 = _grad * w * (x - _r0)
                _acc3 += tl.where(mask, _a3, 0.0)
            _r1 = tl.sum(_acc1, axis=0) / cols
            _r3 = tl.sum(_acc3, axis=0) / cols
        # ---- end of EDIT HERE ---------------------------------------------------------------------------
        tl.store(_stats_ptr + row * 4 + 0, _r0)
        tl.store(_stats_ptr + row * 4 + 1, _r1)
        tl.store(_stats_ptr + row * 4 + 2, _r2)
        tl.store(_stats_ptr + row * 4 + 3, _r3)

    # The gradients of rows longer than _MAX_BACKWARD_BLOCK, and the weights' gradients of the rows that
    # _layernorm_tl_backward_kernel takes. A weight's gradient is a sum over the rows of every row's contribution.
    # One program per BLOCK_C columns and split of the rows (../_triton_rowwise.py chooses the splits) reads, tile
    # by tile of BLOCK_R rows, the rows and their per-row values in _stats, computes each element's derivatives
    # once, writes the inputs' gradients asked for, and adds the weights' contributions lane by lane; at the end it
    # sums its lanes over the tile's rows into its row of _p<j> (one reduction across the warps, not one a tile),
    # and the column sum adds the splits in order: a fixed order and no atomics, so the same bits on every run.
    # _need<j> (the inputs', then the weights') is a run-time flag, never a compile-time constant: the arithmetic,
    # and with it every gradient's bits, is the same whatever the caller asks for. _layernorm_tl_backward_kernel
    # writes its rows' inputs' gradients itself and passes 0 for them.
    @triton.jit(do_not_specialize=["_need0", "_need1", "_need2"])
    def _layernorm_tl_weight_grad_kernel(_grad_ptr, x_ptr, w_ptr, b_ptr, _d0_ptr, _stats_ptr, _p0_ptr, _p1_ptr, _need0, _need1, _need2, rows, cols, rows_per_split,
                                 BLOCK_R: tl.constexpr, BLOCK_C: tl.constexpr, ACC: tl.constexpr):
        columns = tl.program_id(0) * BLOCK_C + tl.arange(0, BLOCK_C)
        column_mask = columns < cols
        first = tl.program_id(1) * rows_per_split
        last = tl.minimum(first + rows_per_split, rows)
        _n = cols
        w = tl.load(w_ptr + columns, mask=column_mask, other=0.0).to(ACC)[None, :]
        _s0 = tl.zeros((BLOCK_R, BLOCK_C), ACC)  # each lane's sum of d/dw over the tiles
        b = tl.load(b_ptr + columns, mask=column_mask, other=0.0).to(ACC)[None, :]
        _s1 = tl.zeros((BLOCK_R, BLOCK_C), ACC)  # each lane's sum of d/db over the tiles
        for start in range(first, last, BLOCK_R):
            tile_rows = start + tl.arange(0, BLOCK_R)
            row_mask = tile_rows < last
            mask = row_mask[:, None] & column_mask[None, :]
            offsets = tile_rows.to(tl.int64)[:, None] * cols + columns[None, :]
            _grad = tl.load(_grad_ptr + offsets, mask=mask, other=0.0).to(ACC)
            x = tl.load(x_ptr + offsets, mask=mask, other=0.0).to(ACC)
            _r0 = tl.load(_stats_ptr + tile_rows.to(tl.int64) * 4 + 0, mask=row_mask, other=0.0)[:, None]
            _r1 = tl.load(_stats_ptr + tile_rows.to(tl.int64) * 4 + 1, mask=row_mask, other=0.0)[:, None]
            _r2 = tl.load(_stats_ptr + tile_rows.to(tl.int64) * 4 + 2, mask=row_mask, other=0.0)[:, None]
            _r3 = tl.load(_stats_ptr + tile_rows.to(tl.int64) * 4 + 3, mask=row_mask, other=0.0)[:, None]
            # ---- EDIT HERE: the gradients from the per-row values (keep them equal to the kernels' above) ----
            _t0 = tl.rsqrt(_r1 + tl.full((), 1e-05, ACC))
            _t1 = x - _r0
            if _need0 != 0:  # d/dx: _grad * (rsqrt(_r1 + 1e-05) * w) - rsqrt(_r1 + 1e-05) * _r2 - rsqrt(_r1 + 1e-05) ** 3.0 * _r3 * (x - _r0)
                tl.store(_d0_ptr + offsets, (_grad * (_t0 * w) - _t0 * _r2 - (_t0) * (_t0) * (_t0) * _r3 * _t1).to(_d0_ptr.dtype.element_ty), mask=mask)
            if _need1 != 0:  # d/dw: _grad * ((x - _r0) * rsqrt(_r1 + 1e-05))
                _s0 += tl.where(mask, _grad * (_t1 * _t0), 0.0)
            if _need2 != 0:  # d/db: _grad
                _s1 += tl.where(mask, _grad, 0.0)
            # ---- end of EDIT HERE ---------------------------------------------------------------------------
        tl.store(_p0_ptr + tl.program_id(1).to(tl.int64) * cols + columns, tl.sum(_s0, axis=0), mask=column_mask)
        tl.store(_p1_ptr + tl.program_id(1).to(tl.int64) * cols + columns, tl.sum(_s1, axis=0), mask=column_mask)


# The longest row the backward holds in registers. Its kernel keeps 10 row-sized values live at once (the
# gradient, the inputs and weights, the shared terms (a mask's exact ones among them), the reductions'
# arguments): past about 12 of them a row of 16384 spills to local memory (on an H100 such a backward runs at 5%
# of a copy), so the longest row in registers falls with their number, and longer rows take the long kernel.
# The launch then reads what the kernel compiled for the row length spills (_backward_launch): the count is an
# estimate, the compiled kernel is not.
_MAX_BACKWARD_BLOCK = 16384

# The backward's long kernel keeps BLOCK lanes of a running value for each reduction of a pass, beside the pass's
# shared terms, so its registers grow with the elements a thread holds. At 16 a thread (4096 elements, 8 warps)
# expressions drawn from the grammar take 128-244 registers, one 8-warp program an SM; at 4 a thread, 32-95.
# On an H200, at rows of 16384 and 65536, 4 a thread runs 1.23x faster (geometric mean) in float32 at 4096
# elements and 32 warps, and 1.10-1.16x in float16/bfloat16 at 2048 and 16 with the cache hints (the passes
# before the last keep the row in L2, the last streams it); float32 takes no hints.
_LONG_BACKWARD = {2: (2048, 16), 4: (4096, 32), 8: (4096, 32)}


def _long_backward(dtype: torch.dtype) -> dict:
    """The backward's long kernel's launch for rows of ``dtype``: its chunk (BLOCK), warps and cache hints."""
    block, warps = _LONG_BACKWARD[dtype.itemsize]
    return {"BLOCK": block, "num_warps": warps, **_cache_hints(dtype)}


# The backward's launch (_backward_launch): rows in registers, at the forward's BLOCK and warps, take the rows
# kernel, as many programs as the GPU holds, where its compiled code spills little, unstaged or staged (its next row
# in shared memory), else one program a row (or, where one program fills an SM, as many as the GPU holds,
# pipelining their rows), and the weights' kernel for the weights' gradients. Longer rows take the long kernel at
# _long_backward's chunk and warps for their per-row values, then the weights' kernel for every gradient. The
# weights' kernel runs on the tile _weight_tile answers (rows, columns, warps: 16 x 64 at 4, or 8 x 64 where that
# spills or leaves an SM too few programs). The column sum adds the weights' partial sums.


def _weight_grads(_grad: torch.Tensor, x: torch.Tensor, w: torch.Tensor, b: torch.Tensor, outs: list[torch.Tensor], stats: torch.Tensor, rows: int, cols: int,
                  acc, opmath: torch.dtype, flags: list[int], wrap) -> list[torch.Tensor]:
    """The weights' partial sums, and the inputs' gradients into ``outs``, from the rows read again with their
    per-row values in ``stats``. ``flags`` holds 1 for each gradient to compute (the inputs', then the
    weights'), 0 for the others; none are computed when it holds no 1."""
    if not any(flags):
        return []
    tile_rows, tile_cols, warps = _weight_tile(_layernorm_tl_weight_grad_kernel,
                                               [_grad.dtype, x.dtype, w.dtype, b.dtype, *[out.dtype for out in outs], stats.dtype]
                                               + [opmath] * 2 + [1] * 3, rows, cols, acc, _grad.device)
    splits, rows_per_split = _splits(_grad.device, rows, _cdiv(cols, tile_cols), tile_rows)
    partials = [torch.empty((splits, cols), dtype=opmath, device=_grad.device) for _ in range(2)]
    wrap(_layernorm_tl_weight_grad_kernel)[(_cdiv(cols, tile_cols), splits)](
        _grad, x, w, b, *outs, stats, *partials, *flags, rows, cols, rows_per_split, BLOCK_R=tile_rows, BLOCK_C=tile_cols,
        ACC=acc, num_warps=warps)
    return partials


# _known: the forward's per-row values (layernorm_tl_train's second output), or None to compute them again.
@torch.library.triton_op(_OP + "_backward", mutates_args=(), schema="(Tensor _grad, Tensor x, Tensor w, Tensor b, bool[] _needs, Tensor? _known=None) -> Tensor[]")
def _layernorm_tl_backward_impl(_grad: torch.Tensor, x: torch.Tensor, w: torch.Tensor, b: torch.Tensor, _needs: list[bool], _known: torch.Tensor | None = None) -> list[torch.Tensor]:
    if x.device.type != "cuda":
        return _layernorm_tl_backward_cpu(_grad, x, w, b, _needs, _known)
    if not TRITON_AVAILABLE:
        raise RuntimeError("layernorm_tl_backward: the CUDA implementation needs triton (pip install triton)")
    return _layernorm_tl_backward_launch(_grad, x, w, b, _needs, wrap_triton, known=_known)


def _layernorm_tl_backward_launch(_grad: torch.Tensor, x: torch.Tensor, w: torch.Tensor, b: torch.Tensor, _needs: list[bool], wrap,
                    known: torch.Tensor | None = None) -> list[torch.Tensor]:
    """The CUDA implementation of the backward: the checks, then the launches of wrap(each kernel): wrap_triton
    inside the registered op (where torch.compile must see the launches), the kernel itself on the eager
    training path (_LayernormTlAutograd below). ``known``: the forward's per-row values, saved by
    the forward that autograd recorded (_layernorm_tl_launch's save), which the long kernel loads instead of computing
    them again; None computes them."""
    _check_backward_inputs(_grad, x, w, b, _needs)
    _check_known(known, _grad, 2, "layernorm_tl")
    known = None if known is None else known.contiguous()
    _grad_contig = _grad.contiguous()
    x_contig = x.contiguous()
    w_contig = w.contiguous()
    b_contig = b.contiguous()
    cols = x.shape[-1]
    rows = _grad.numel() // cols if cols else 0
    outs = [torch.empty(x.shape, dtype=x.dtype, device=x.device) if need else _grad_contig
            for need in _needs[:1]]
    if rows == 0 or cols == 0:
        weight_grads = [torch.zeros(t.shape, dtype=t.dtype, device=t.device) for t in (w, b, )]
        return [g for g, need in zip(outs + weight_grads, _needs) if need]
    acc = tl.float64 if _grad.dtype == torch.float64 else tl.float32
    flags = [int(need) for need in _needs[:1]]
    weight_flags = [int(need) for need in _needs[1:]]
    opmath = torch.float64 if _grad.dtype == torch.float64 else torch.float32
    # On the inputs' GPU, on its current stream (see _layernorm_tl_launch).
    with torch.cuda.device(x.device):
        # Rows up to _MAX_BACKWARD_BLOCK stay in registers, unless the kernel compiled for them spills; the long
        # kernel's passes take the others.
        long = cols > _MAX_BACKWARD_BLOCK
        if not long:
            block = _next_power_of_2(cols)
            launch = dict(BLOCK=block, ACC=acc, num_warps=_num_warps(block))
            # The rows kernel's warps and how many of its programs the GPU holds at once, from the kernel compiled
            # (once, not launched) for these dtypes and this row length: the gradient, the inputs, the weights and
            # the inputs' gradients; the weights' partial sums; the flags; rows (16 stands in: it only bounds the
            # loop) and cols. Under torch.compile's dynamic shapes, where the row length is a symbol, nothing can
            # be compiled ahead (0 programs), and the rows take the kernel of one program a row.
            rows_args = [_grad.dtype] * 5 + [opmath] * 2 + [1] * 1 + [16, cols]
            # Where one program fills an SM and that kernel spills, or where it spills past the tolerance, its
            # staged build, the next row copied into shared memory instead (backward_launch).
            plan = _backward_launch(_layernorm_tl_backward_rows_kernel, rows_args, launch, _grad.device, rows, rows_kernel=True)
            if plan is not None:
                launch["num_warps"], programs, stages = plan
                partials = [torch.empty((programs, cols), dtype=opmath, device=_grad.device) for _ in range(2)]
                wrap(_layernorm_tl_backward_rows_kernel)[(programs,)](
                    _grad_contig, x_contig, w_contig, b_contig, *outs, *partials, *flags, rows, cols, STAGES=stages, **launch)
            else:
                # The same for the kernel of one program a row, its per-row values in op math; then how many programs
                # it runs on and whether they pipeline their rows (backward_launch).
                one_row = [_grad.dtype] * 5 + [opmath] + [1] * 1 + [16, cols]
                plan = _backward_launch(_layernorm_tl_backward_kernel, one_row, launch, _grad.device, rows)
                long = plan is None
                if not long:
                    launch["num_warps"], programs, stages = plan
                    stats = torch.empty((rows, 4), dtype=opmath, device=_grad.device)
                    wrap(_layernorm_tl_backward_kernel)[(programs,)](
                        _grad_contig, x_contig, w_contig, b_contig, *outs, stats, *flags, rows, cols, STAGES=stages, **launch)
                    partials = _weight_grads(_grad_contig, x_contig, w_contig, b_contig, outs, stats, rows, cols, acc, opmath,
                                             [0] * 1 + weight_flags, wrap)
        if long:
            stats = torch.empty((rows, 4), dtype=opmath, device=_grad.device)
            wrap(_layernorm_tl_backward_long_kernel)[(rows,)](
                _grad_contig, x_contig, w_contig, b_contig, stats, cols, stats if known is None else known, ACC=acc,
                KNOWN=known is not None, **_long_backward(_grad.dtype))
            partials = _weight_grads(_grad_contig, x_contig, w_contig, b_contig, outs, stats, rows, cols, acc, opmath, flags + weight_flags, wrap)
        if not any(_needs[1:]):
            return [g for g, need in zip(outs, _needs) if need]
        weight_grads = [_column_sum(partial, _grad.dtype, wrap) for partial in partials]
    return [g for g, need in zip(outs + weight_grads, _needs) if need]


@torch.library.register_kernel(_OP + "_backward", "cpu")
def _layernorm_tl_backward_cpu(_grad: torch.Tensor, x: torch.Tensor, w: torch.Tensor, b: torch.Tensor, _needs: list[bool], _known: torch.Tensor | None = None) -> list[torch.Tensor]:
    # The same derivatives in PyTorch, over (rows, cols) views, in op-math precision, each gradient rounded
    # once; a weight's gradient is its contributions summed over the rows. The per-row values are computed
    # again: _known is checked, not read.
    _check_backward_inputs(_grad, x, w, b, _needs)
    _check_known(_known, _grad, 2, "layernorm_tl")
    dtype, shape = x.dtype, x.shape
    opmath = torch.float32 if dtype in (torch.float16, torch.bfloat16) else dtype
    cols = shape[-1]
    rows = _grad.numel() // cols if cols else 0
    if rows == 0 or cols == 0:
        grads = [torch.empty(shape, dtype=dtype, device=x.device)] * 1
        grads += [torch.zeros(t.shape, dtype=dtype, device=t.device) for t in (w, b, )]
        return [g.clone() for g, need in zip(grads, _needs) if need]
    _n = cols
    _grad = _grad.reshape(rows, cols).to(opmath)
    x = x.reshape(rows, cols).to(opmath)
    w = w.to(opmath)
    b = b.to(opmath)
    _a0 = torch.broadcast_to(x, (rows, cols))
    _r0 = _a0.mean(-1, keepdim=True)  # mean(x)
    _a1 = torch.broadcast_to((x - _r0) ** 2.0, (rows, cols))
    _r1 = _a1.mean(-1, keepdim=True)  # mean((x - mean(x)) ** 2.0)
    _a2 = torch.broadcast_to(_grad * w, (rows, cols))
    _r2 = _a2.mean(-1, keepdim=True)  # mean(_grad * w)
    _a3 = torch.broadcast_to(_grad * w * (x - _r0), (rows, cols))
    _r3 = _a3.mean(-1, keepdim=True)  # mean(_grad * w * (x - mean(x)))
    _t0 = torch.rsqrt(_r1 + 1e-05)
    _t1 = x - _r0
    grads = []
    if _needs[0]:
        grads.append(torch.empty((rows, cols), dtype=dtype, device=_grad.device).copy_(_grad * (_t0 * w) - _t0 * _r2 - _t0 ** 3.0 * _r3 * _t1).view(shape))
    if _needs[1]:
        grads.append(torch.broadcast_to(_grad * (_t1 * _t0), (rows, cols)).sum(0).to(dtype))
    if _needs[2]:
        grads.append(torch.broadcast_to(_grad, (rows, cols)).sum(0).to(dtype))
    return grads


# ---- autograd ---------------------------------------------------------------------------------
def _setup_context(ctx, inputs, output) -> None:
    # The backward needs the inputs (not the output) to evaluate the derivative.
    ctx.save_for_backward(*inputs)


_BACKWARD = "myteam::layernorm_tl_backward"


@torch.library.register_fake(_BACKWARD)
def _layernorm_tl_backward_fake(_grad: torch.Tensor, x: torch.Tensor, w: torch.Tensor, b: torch.Tensor, _needs: list[bool], _known: torch.Tensor | None = None) -> list[torch.Tensor]:
    # The gradient of each argument asked for has that argument's shape: an input's, or a weight's.
    return [torch.empty(t.shape, dtype=t.dtype, device=t.device) for t, need in zip((x, w, b,), _needs) if need]


def _backward(ctx, grad_out: torch.Tensor):
    # The generated backward: layernorm_tl_backward computes, in one pass over the rows, the gradient of
    # every input and weight that needs one (ctx.needs_input_grad), from the derivatives kernelgen wrote
    # from the expression into _layernorm_tl_backward_kernel and _layernorm_tl_backward_cpu above. It saves
    # nothing but the arguments: it computes the forward's per-row values again from the row it holds.
    # To differentiate reference() instead, register _backward_vjp below.
    needs = list(ctx.needs_input_grad)
    grads = iter(torch.ops.myteam.layernorm_tl_backward.default(grad_out, *ctx.saved_tensors, needs))
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

# The autograd formula of layernorm_tl_train (../_triton_rowwise.py): the generated backward, as _backward above, from
# the arguments and the forward's per-row values, which it saves and passes as _known: the long kernel loads them.
_register_training_autograd(_OP + "_train", torch.ops.myteam.layernorm_tl_backward.default)


# ---- the eager training path --------------------------------------------------------------------
class _LayernormTlAutograd(torch.autograd.Function):
    """What autograd records for an eager call of layernorm_tl() that needs gradients, when nothing else
    watches the call (../_triton_eager.py: eager_autograd_ok): the registered op's forward and backward
    (_layernorm_tl_launch, _layernorm_tl_backward_launch), their kernels launched directly. The saved tensors
    and the gradients are the registered op's; the host time per step is a fraction of it. The forward also
    saves the per-row values the backward reads (2 a row, in op math: 8 bytes a row of float16, bfloat16
    or float32, 16 of float64), which spares the backward's long kernel the passes over the row that would
    compute them again; layernorm_tl_train saves the same where autograd records the registered ops (torch.compile)."""

    @staticmethod
    def forward(ctx, x, w, b):
        out, stats = _layernorm_tl_launch(x, w, b, _layernorm_tl_kernel, _layernorm_tl_long_kernel, save=True)
        ctx.save_for_backward(x, w, b, stats)
        return out

    @staticmethod
    @torch.autograd.function.once_differentiable
    def backward(ctx, grad_out):
        needs = list(ctx.needs_input_grad)
        *arguments, stats = ctx.saved_tensors
        grads = iter(_layernorm_tl_backward_launch(grad_out, *arguments, needs, lambda kernel: kernel, known=stats))
        return tuple(next(grads) if need else None for need in needs)

