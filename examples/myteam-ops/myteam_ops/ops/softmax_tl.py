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
# The autograd formula of the training forward (softmax_tl_train, below) and the check of the per-row values it saves,
# shared by the package's Triton rowwise ops.
from .._triton_rowwise import check_known as _check_known
from .._triton_rowwise import register_training_autograd as _register_training_autograd

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
        return _softmax_tl_launch(x, _softmax_tl_kernel, _softmax_tl_long_kernel)[0]  # see "the eager fast path" below
    if _eager_autograd_ok(x):
        return _SoftmaxTlAutograd.apply(x)  # the eager training path, below
    if _autograd_records(x):
        # Autograd records the call through the dispatcher (torch.compile, a mode): the op that also returns the
        # per-row values its backward reads (softmax_tl_train, below).
        return torch.ops.myteam.softmax_tl_train.default(x)[0]
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
    def _softmax_tl_kernel(x_ptr, out_ptr, cols, _stats_ptr, _save, BLOCK: tl.constexpr, ACC: tl.constexpr):
        base = tl.program_id(0).to(tl.int64) * cols
        offsets = tl.arange(0, BLOCK)
        mask = offsets < cols
        x = tl.load(x_ptr + base + offsets, mask=mask, other=0.0).to(ACC)
        # ---- EDIT HERE: the kernel body (keep reference() above in step) ----------------------------
        # Each reduction over the row's lanes; masked lanes hold the reduction's identity.
        _r0 = tl.reduce(tl.where(mask, x, float("-inf")), 0, _max_nan)  # max(x)
        _r1 = tl.sum(tl.where(mask, tl.exp(x - _r0), 0.0), axis=0)  # sum(exp(x - max(x)))
        if _save != 0:
            # The per-row values the backward reads, for the eager training path's backward (see the backward).
            # _save is a run-time flag, never a compile-time constant: the output's bits are the same either way.
            tl.store(_stats_ptr + tl.program_id(0).to(tl.int64) * 2 + 0, _r0)
            tl.store(_stats_ptr + tl.program_id(0).to(tl.int64) * 2 + 1, _r1)
        result = tl.exp(x - _r0) / _r1
        # ---- end of EDIT HERE ---------------------------------------------------------------------------
        tl.store(out_ptr + base + offsets, result.to(out_ptr.dtype.element_ty), mask=mask)

    @triton.jit(do_not_specialize=["_save"])
    def _softmax_tl_long_kernel(x_ptr, out_ptr, cols, _stats_ptr, _save, BLOCK: tl.constexpr, ACC: tl.constexpr,
                    KEEP: tl.constexpr, STREAM: tl.constexpr):
        base = tl.program_id(0).to(tl.int64) * cols
        # ---- EDIT HERE: the kernel body, in passes over the row (keep it equal to the one above) -----
        _acc0 = tl.full((BLOCK,), float("-inf"), ACC)  # max(x): lane-wise partials, then one reduction
        _acc1 = tl.zeros((BLOCK,), ACC)  # sum(exp(x - max(x))): lane-wise partials at the lane's running maximum
        for start in range(0, cols, BLOCK):
            offsets = start + tl.arange(0, BLOCK)
            mask = offsets < cols
            x = tl.load(x_ptr + base + offsets, mask=mask, other=0.0, eviction_policy=KEEP).to(ACC)
            # max(x) and, in the same pass, sum(exp(x - max(x))):
            # each lane adds its terms at its own running maximum _m, and rescales what it has added by
            # exp(old - new) when _m grows (the online softmax: no pass of their own after the maximum).
            # A lane that has seen only -inf adds 0 times the rest of the term, as the exact sum does.
            _f = tl.where(mask, x, -float("inf"))
            _m = _max_nan(_acc0, _f)
            _scale = tl.where(_m == -float("inf"), 1.0, tl.exp(_acc0 - _m))
            _acc1 = _acc1 * _scale + tl.where(mask, tl.where(_m == -float("inf"), 0.0, tl.exp(_f - _m)), 0.0)
            _acc0 = _m
        _r0 = tl.reduce(_acc0, 0, _max_nan)
        _r1 = tl.sum(_acc1 * tl.exp(_acc0 - _r0), axis=0)
        if _save != 0:
            # The per-row values the backward reads, for the eager training path's backward (see the backward).
            # _save is a run-time flag, never a compile-time constant: the output's bits are the same either way.
            tl.store(_stats_ptr + tl.program_id(0).to(tl.int64) * 2 + 0, _r0)
            tl.store(_stats_ptr + tl.program_id(0).to(tl.int64) * 2 + 1, _r1)
        for start in range(0, cols, BLOCK):
            offsets = start + tl.arange(0, BLOCK)
            mask = offsets < cols
            x = tl.load(x_ptr + base + offsets, mask=mask, other=0.0, eviction_policy=STREAM).to(ACC)
            result = tl.exp(x - _r0) / _r1
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
def _softmax_tl_impl(x: torch.Tensor) -> torch.Tensor:
    if x.device.type != "cuda":
        # Tracing on CPU (opcheck, torch.compile) runs this body too: stay off the GPU path.
        return _softmax_tl_cpu(x)
    if not TRITON_AVAILABLE:
        raise RuntimeError("softmax_tl: the CUDA implementation needs triton (pip install triton)")
    return _softmax_tl_launch(x, wrap_triton(_softmax_tl_kernel), wrap_triton(_softmax_tl_long_kernel))[0]


# softmax_tl_train: the op as autograd records it where the eager training path does not serve the call (under
# torch.compile, under a TorchFunctionMode or TorchDispatchMode): the output, and the forward's per-row values the
# backward reads (2 a row, in op math), which its autograd formula saves and passes to softmax_tl_backward as _known.
# softmax_tl itself returns the output alone: inference, and callers of torch.ops.myteam.softmax_tl, take it.
@torch.library.triton_op(_OP + "_train", mutates_args=(), schema="(Tensor x) -> (Tensor, Tensor)")
def _softmax_tl_train_impl(x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    if x.device.type != "cuda":
        return _softmax_tl_train_cpu(x)
    if not TRITON_AVAILABLE:
        raise RuntimeError("softmax_tl: the CUDA implementation needs triton (pip install triton)")
    out, stats = _softmax_tl_launch(x, wrap_triton(_softmax_tl_kernel), wrap_triton(_softmax_tl_long_kernel), save=True)
    assert stats is not None  # save=True always returns the per-row values
    return out, stats


def _softmax_tl_launch(x: torch.Tensor, kernel, long_kernel, save: bool = False) -> tuple[torch.Tensor, torch.Tensor | None]:
    """The CUDA implementation: the checks, then one launch of ``kernel`` (rows in registers) or
    ``long_kernel`` (longer rows), which are the @triton.jit functions themselves on the eager fast
    path and wrap_triton of them inside the registered op (where torch.compile must see the launch).
    Returns the output and, with ``save``, the per-row values the backward reads (rows, 2), in op math
    (the eager training path saves them for its backward); else None."""
    _check_inputs(x)
    # Row-major data; the *_contig locals keep any copies alive during the launch.
    x_contig = x.contiguous()
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
            warps = _rows_warps(_softmax_tl_kernel, [x.dtype, out.dtype, cols, out.dtype, 0],
                                dict(BLOCK=block, ACC=acc, num_warps=warps), x.device, 32)
    if cols > _MAX_BLOCK or warps is None:
        kernel, (block, hints) = long_kernel, _long_forward(out.dtype)
        warps = _forward_warps(block, out.dtype)
    # The inputs' GPU must be current: Triton launches on the current device, on its current stream
    # (the caller's stream, so CUDA graphs and side streams work). Switching only when needed saves
    # host time, which is what bounds a launch of a few microseconds of work.
    # Without save, the kernels' _stats_ptr is out, which they never write with _save 0.
    if x.device.index == torch.cuda.current_device():
        kernel[(rows,)](x_contig, out, cols, out if stats is None else stats, int(save), BLOCK=block, ACC=acc,
                        num_warps=warps, **hints)
    else:
        with torch.cuda.device(x.device):
            kernel[(rows,)](x_contig, out, cols, out if stats is None else stats, int(save), BLOCK=block, ACC=acc,
                            num_warps=warps, **hints)
    return out, stats


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


@torch.library.register_kernel(_OP + "_train", "cpu")
def _softmax_tl_train_cpu(x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    # The output as softmax_tl's CPU implementation computes it; the per-row values are reference()'s reductions
    # in op math, as the kernels save them (the CPU backward computes them again and does not read them).
    out = _softmax_tl_cpu(x)
    opmath = torch.float32 if out.dtype in (torch.float16, torch.bfloat16) else out.dtype
    cols = x.shape[-1]
    rows = out.numel() // cols if cols else 0
    if out.numel() == 0:
        return out, torch.empty((rows, 2), dtype=opmath, device=out.device)
    x = x.to(opmath)
    _r0 = torch.amax(x, dim=-1, keepdim=True)  # max(x)
    _r1 = torch.sum(torch.exp(x - _r0), dim=-1, keepdim=True)  # sum(exp(x - max(x)))
    shape = (*x.shape[:-1], 1)
    return out, torch.cat([torch.broadcast_to(_r0, shape), torch.broadcast_to(_r1, shape)], dim=-1).reshape(rows, 2)


# ---- the backward -------------------------------------------------------------------------------
# softmax_tl_backward: the gradient of every input asked for, from the derivatives kernelgen
# wrote from the expression (in the kernels and the CPU implementation below). softmax_tl's autograd formula saves
# nothing but the arguments: each row's per-row values (the forward's reductions and the backward's own) are computed
# again from the row, which costs arithmetic, not memory traffic, where the row stays on chip.
# Rows longer than that are read once more for every pass that computes them, so a forward that autograd records
# saves the forward's values the backward reads (2 a row: _softmax_tl_launch's save, called by the eager
# training path and by softmax_tl_train), passes them as _known, and the long
# kernel loads them (KNOWN) and computes only the backward's own reductions, in as many passes as without them.
def _check_backward_inputs(_grad: torch.Tensor, x: torch.Tensor, _needs: list[bool]) -> None:
    # The forward's checks, then the output's gradient: the inputs' shape, dtype and device.
    _check_inputs(x)
    if _grad.device != x.device or _grad.dtype != x.dtype or _grad.shape != x.shape:
        raise RuntimeError(f"softmax_tl_backward: grad is {_grad.dtype} of shape {list(_grad.shape)} on {_grad.device}, "
                           f"but the inputs are {x.dtype} of shape {list(x.shape)} on {x.device}")
    if len(_needs) != 1:
        raise RuntimeError(f"softmax_tl_backward: got {len(_needs)} flags in _needs, but softmax_tl has 1 input (one flag each)")


if TRITON_AVAILABLE:

    # A row of up to _MAX_BACKWARD_BLOCK elements stays in registers (BLOCK lanes) while the kernel computes the
    # per-row values, then every input's gradient (_softmax_tl_backward_row). The launch runs one program a row
    # (STAGES=1), or, where one program fills an SM and so leaves it idle while the row's reductions wait on each
    # other, as many programs as the GPU holds, each taking every num_programs-th row from its own index on, at
    # STAGES=2: Triton's software pipeline then copies a program's next row into shared memory (cp.async) while it
    # computes the current one (../_triton_rowwise.py, backward_pipeline). _need<j> is a run-time flag, never a
    # compile-time constant (do_not_specialize): the arithmetic, and with it every gradient's bits, is the same
    # whatever the caller asks for.
    # The row's math, once for every kernel that holds a row in registers: from the row's values (the gradient,
    # the inputs), its per-row values (_r<k>: the forward's reductions and the backward's own)
    # and every input's gradient (_d<i>). Triton inlines it where it is called,
    # and drops what a caller does not use.
    @triton.jit
    def _softmax_tl_backward_math(_grad, x, cols, mask, BLOCK: tl.constexpr, ACC: tl.constexpr):
        _n = cols
        # ---- EDIT HERE: the backward's per-row values, then the gradients (keep them the derivatives of reference())
        _a0 = x
        _r0 = tl.reduce(tl.where(mask, _a0, float("-inf")), 0, _max_nan)  # max(x)
        _a1 = tl.exp(x - _r0)
        _r1 = tl.sum(tl.where(mask, _a1, 0.0), axis=0)  # sum(exp(x - max(x)))
        _a2 = _grad * tl.exp(x - _r0)
        _r2 = tl.sum(tl.where(mask, _a2, 0.0), axis=0)  # sum(_grad * exp(x - max(x)))
        _t0 = tl.exp(x - _r0)
        _d0 = _grad * (_t0 * (tl.full((), 1.0, ACC) / _r1)) - _r2 / ((_r1) * (_r1)) * _t0  # d/dx: _grad * (exp(x - _r0) * (1.0 / _r1)) - _r2 / _r1 ** 2.0 * exp(x - _r0)
        # ---- end of EDIT HERE ---------------------------------------------------------------------------
        return _r0, _r1, _r2, _d0

    @triton.jit
    def _softmax_tl_backward_row(row, _grad_ptr, x_ptr, _d0_ptr, _need0, cols, offsets, mask, BLOCK: tl.constexpr, ACC: tl.constexpr):
        # The gradients of row `row`: _softmax_tl_backward_kernel's body, inlined where it is called.
        base = tl.cast(row, tl.int64) * cols
        _grad = tl.load(_grad_ptr + base + offsets, mask=mask, other=0.0).to(ACC)
        x = tl.load(x_ptr + base + offsets, mask=mask, other=0.0).to(ACC)
        _r0, _r1, _r2, _d0 = _softmax_tl_backward_math(_grad, x, cols, mask, BLOCK, ACC)
        if _need0 != 0:
            tl.store(_d0_ptr + base + offsets, _d0.to(_d0_ptr.dtype.element_ty), mask=mask)

    @triton.jit(do_not_specialize=["_need0"])
    def _softmax_tl_backward_kernel(_grad_ptr, x_ptr, _d0_ptr, _need0, rows, cols, BLOCK: tl.constexpr, ACC: tl.constexpr,
                    STAGES: tl.constexpr = 1):
        offsets = tl.arange(0, BLOCK)
        mask = offsets < cols
        if STAGES == 1:  # one program a row: the launch's grid is the rows
            _softmax_tl_backward_row(tl.program_id(0), _grad_ptr, x_ptr, _d0_ptr, _need0, cols, offsets, mask, BLOCK, ACC)
        else:  # a program takes every num_programs-th row, the next one's loads in flight while it computes its own
            for row in tl.range(tl.program_id(0), rows, tl.num_programs(0), num_stages=STAGES):
                _softmax_tl_backward_row(row, _grad_ptr, x_ptr, _d0_ptr, _need0, cols, offsets, mask, BLOCK, ACC)

    # Rows longer than _MAX_BACKWARD_BLOCK: one program a row, in passes over the row in chunks of BLOCK, as the
    # forward's long kernel takes them (reductions that read no result of each other share a pass), then one for
    # the gradients. Loads that a pass does not use are dropped by the compiler. The passes before the last load
    # the row with KEEP and the last with STREAM, as the forward's (_long_backward says for which dtypes).
    @triton.jit(do_not_specialize=["_need0"])
    def _softmax_tl_backward_long_kernel(_grad_ptr, x_ptr, _d0_ptr, _need0, cols, _known_ptr, BLOCK: tl.constexpr, ACC: tl.constexpr,
                    KEEP: tl.constexpr, STREAM: tl.constexpr, KNOWN: tl.constexpr):
        row = tl.program_id(0).to(tl.int64)
        base = row * cols
        _n = cols
        # ---- EDIT HERE: the kernel body, in passes over the row (keep it equal to the one above) ---------
        if KNOWN:
            # The forward's per-row values, saved by the training forward (_known, rows x 2): loaded, not
            # computed again, so that only the backward's own reductions take a pass over the row.
            _r0 = tl.load(_known_ptr + row * 2 + 0).to(ACC)  # max(x)
            _r1 = tl.load(_known_ptr + row * 2 + 1).to(ACC)  # sum(exp(x - max(x)))
            _acc2 = tl.full((BLOCK,), 0.0, ACC)  # sum(_grad * exp(x - max(x))): lane-wise partials, then one reduction
            for start in range(0, cols, BLOCK):
                offsets = start + tl.arange(0, BLOCK)
                mask = offsets < cols
                _grad = tl.load(_grad_ptr + base + offsets, mask=mask, other=0.0, eviction_policy=KEEP).to(ACC)
                x = tl.load(x_ptr + base + offsets, mask=mask, other=0.0, eviction_policy=KEEP).to(ACC)
                _a2 = _grad * tl.exp(x - _r0)
                _acc2 += tl.where(mask, _a2, 0.0)
            _r2 = tl.sum(_acc2, axis=0)
        else:
            _acc0 = tl.full((BLOCK,), float("-inf"), ACC)  # max(x): lane-wise partials, then one reduction
            _acc1 = tl.zeros((BLOCK,), ACC)  # sum(exp(x - max(x))): lane-wise partials at the lane's running maximum
            _acc2 = tl.zeros((BLOCK,), ACC)  # sum(_grad * exp(x - max(x))): lane-wise partials at the lane's running maximum
            for start in range(0, cols, BLOCK):
                offsets = start + tl.arange(0, BLOCK)
                mask = offsets < cols
                _grad = tl.load(_grad_ptr + base + offsets, mask=mask, other=0.0, eviction_policy=KEEP).to(ACC)
                x = tl.load(x_ptr + base + offsets, mask=mask, other=0.0, eviction_policy=KEEP).to(ACC)
                _a0 = x
                # max(x) and, in the same pass, sum(exp(x - max(x))), sum(_grad * exp(x - max(x))):
                # each lane adds its terms at its own running maximum _m, and rescales what it has added by
                # exp(old - new) when _m grows (the online softmax: no pass of their own after the maximum).
                # A lane that has seen only -inf adds 0 times the rest of the term, as the exact sum does.
                _f = tl.where(mask, _a0, -float("inf"))
                _m = _max_nan(_acc0, _f)
                _scale = tl.where(_m == -float("inf"), 1.0, tl.exp(_acc0 - _m))
                _acc1 = _acc1 * _scale + tl.where(mask, tl.where(_m == -float("inf"), 0.0, tl.exp(_f - _m)), 0.0)
                _acc2 = _acc2 * _scale + tl.where(mask, tl.where(_m == -float("inf"), 0.0 * (_grad), tl.exp(_f - _m) * (_grad)), 0.0)
                _acc0 = _m
            _r0 = tl.reduce(_acc0, 0, _max_nan)
            _r1 = tl.sum(_acc1 * tl.exp(_acc0 - _r0), axis=0)
            _r2 = tl.sum(_acc2 * tl.exp(_acc0 - _r0), axis=0)
        for start in range(0, cols, BLOCK):
            offsets = start + tl.arange(0, BLOCK)
            mask = offsets < cols
            _grad = tl.load(_grad_ptr + base + offsets, mask=mask, other=0.0, eviction_policy=STREAM).to(ACC)
            x = tl.load(x_ptr + base + offsets, mask=mask, other=0.0, eviction_policy=STREAM).to(ACC)
            _t0 = tl.exp(x - _r0)
            if _need0 != 0:
                tl.store(_d0_ptr + base + offsets, (_grad * (_t0 * (tl.full((), 1.0, ACC) / _r1)) - _r2 / ((_r1) * (_r1)) * _t0).to(_d0_ptr.dtype.element_ty), mask=mask,
                         eviction_policy=STREAM)
        # ---- end of EDIT HERE ---------------------------------------------------------------------------


# The longest row the backward holds in registers. Its kernel keeps 6 row-sized values live at once (the
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


# The backward's launch: rows in registers at the forward's BLOCK and warps, one program a row (or, where one
# program fills an SM, as many as the GPU holds, pipelining their rows: _backward_launch); longer rows in the
# long kernel at _long_backward's chunk and warps.


# _known: the forward's per-row values (softmax_tl_train's second output), or None to compute them again.
@torch.library.triton_op(_OP + "_backward", mutates_args=(), schema="(Tensor _grad, Tensor x, bool[] _needs, Tensor? _known=None) -> Tensor[]")
def _softmax_tl_backward_impl(_grad: torch.Tensor, x: torch.Tensor, _needs: list[bool], _known: torch.Tensor | None = None) -> list[torch.Tensor]:
    if x.device.type != "cuda":
        return _softmax_tl_backward_cpu(_grad, x, _needs, _known)
    if not TRITON_AVAILABLE:
        raise RuntimeError("softmax_tl_backward: the CUDA implementation needs triton (pip install triton)")
    return _softmax_tl_backward_launch(_grad, x, _needs, wrap_triton, known=_known)


def _softmax_tl_backward_launch(_grad: torch.Tensor, x: torch.Tensor, _needs: list[bool], wrap,
                    known: torch.Tensor | None = None) -> list[torch.Tensor]:
    """The CUDA implementation of the backward: the checks, then the launches of wrap(each kernel): wrap_triton
    inside the registered op (where torch.compile must see the launches), the kernel itself on the eager
    training path (_SoftmaxTlAutograd below). ``known``: the forward's per-row values, saved by
    the forward that autograd recorded (_softmax_tl_launch's save), which the long kernel loads instead of computing
    them again; None computes them."""
    _check_backward_inputs(_grad, x, _needs)
    _check_known(known, _grad, 2, "softmax_tl")
    known = None if known is None else known.contiguous()
    _grad_contig = _grad.contiguous()
    x_contig = x.contiguous()
    cols = x.shape[-1]
    rows = _grad.numel() // cols if cols else 0
    outs = [torch.empty(x.shape, dtype=x.dtype, device=x.device) if need else _grad_contig
            for need in _needs[:1]]
    if rows == 0 or cols == 0:
        return [g for g, need in zip(outs, _needs) if need]
    acc = tl.float64 if _grad.dtype == torch.float64 else tl.float32
    flags = [int(need) for need in _needs[:1]]
    # On the inputs' GPU, on its current stream (see _softmax_tl_launch).
    with torch.cuda.device(x.device):
        # Rows up to _MAX_BACKWARD_BLOCK stay in registers, unless the kernel compiled for them spills; the long
        # kernel's passes take the others.
        long = cols > _MAX_BACKWARD_BLOCK
        if not long:
            block = _next_power_of_2(cols)
            launch = dict(BLOCK=block, ACC=acc, num_warps=_num_warps(block))
            # The kernel's warps and how many of its programs the GPU holds, from the kernel compiled (once, not
            # launched) for these dtypes and this row length (rows: 16 stands in, it only bounds the loop); then how
            # many programs it runs on and whether they pipeline their rows (backward_launch).
            one_row = [_grad.dtype] * 3 + [1] * 1 + [16, cols]
            plan = _backward_launch(_softmax_tl_backward_kernel, one_row, launch, _grad.device, rows)
            long = plan is None
            if not long:
                launch["num_warps"], programs, stages = plan
                wrap(_softmax_tl_backward_kernel)[(programs,)](
                    _grad_contig, x_contig, *outs, *flags, rows, cols, STAGES=stages, **launch)
        if long:
            wrap(_softmax_tl_backward_long_kernel)[(rows,)](
                _grad_contig, x_contig, *outs, *flags, cols, _grad_contig if known is None else known, ACC=acc,
                KNOWN=known is not None, **_long_backward(_grad.dtype))
    return [g for g, need in zip(outs, _needs) if need]


@torch.library.register_kernel(_OP + "_backward", "cpu")
def _softmax_tl_backward_cpu(_grad: torch.Tensor, x: torch.Tensor, _needs: list[bool], _known: torch.Tensor | None = None) -> list[torch.Tensor]:
    # The same derivatives in PyTorch, over (rows, cols) views, in op-math precision, each gradient rounded
    # once; a weight's gradient is its contributions summed over the rows. The per-row values are computed
    # again: _known is checked, not read.
    _check_backward_inputs(_grad, x, _needs)
    _check_known(_known, _grad, 2, "softmax_tl")
    dtype, shape = x.dtype, x.shape
    opmath = torch.float32 if dtype in (torch.float16, torch.bfloat16) else dtype
    cols = shape[-1]
    rows = _grad.numel() // cols if cols else 0
    if rows == 0 or cols == 0:
        grads = [torch.empty(shape, dtype=dtype, device=x.device)] * 1
        return [g.clone() for g, need in zip(grads, _needs) if need]
    _n = cols
    _grad = _grad.reshape(rows, cols).to(opmath)
    x = x.reshape(rows, cols).to(opmath)
    _a0 = torch.broadcast_to(x, (rows, cols))
    _r0 = _a0.amax(-1, keepdim=True)  # max(x)
    _a1 = torch.broadcast_to(torch.exp(x - _r0), (rows, cols))
    _r1 = _a1.sum(-1, keepdim=True)  # sum(exp(x - max(x)))
    _a2 = torch.broadcast_to(_grad * torch.exp(x - _r0), (rows, cols))
    _r2 = _a2.sum(-1, keepdim=True)  # sum(_grad * exp(x - max(x)))
    _t0 = torch.exp(x - _r0)
    grads = []
    if _needs[0]:
        grads.append(torch.empty((rows, cols), dtype=dtype, device=_grad.device).copy_(_grad * (_t0 * (1.0 / _r1)) - _r2 / _r1 ** 2.0 * _t0).view(shape))
    return grads


# ---- autograd ---------------------------------------------------------------------------------
def _setup_context(ctx, inputs, output) -> None:
    # The backward needs the inputs (not the output) to evaluate the derivative.
    ctx.save_for_backward(*inputs)


_BACKWARD = "myteam::softmax_tl_backward"


@torch.library.register_fake(_BACKWARD)
def _softmax_tl_backward_fake(_grad: torch.Tensor, x: torch.Tensor, _needs: list[bool], _known: torch.Tensor | None = None) -> list[torch.Tensor]:
    # The gradient of each argument asked for has that argument's shape: an input's, or a weight's.
    return [torch.empty(t.shape, dtype=t.dtype, device=t.device) for t, need in zip((x,), _needs) if need]


def _backward(ctx, grad_out: torch.Tensor):
    # The generated backward: softmax_tl_backward computes, in one pass over the rows, the gradient of
    # every input and weight that needs one (ctx.needs_input_grad), from the derivatives kernelgen wrote
    # from the expression into _softmax_tl_backward_kernel and _softmax_tl_backward_cpu above. It saves
    # nothing but the arguments: it computes the forward's per-row values again from the row it holds.
    # To differentiate reference() instead, register _backward_vjp below.
    needs = list(ctx.needs_input_grad)
    grads = iter(torch.ops.myteam.softmax_tl_backward.default(grad_out, *ctx.saved_tensors, needs))
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

# The autograd formula of softmax_tl_train (../_triton_rowwise.py): the generated backward, as _backward above, from
# the arguments and the forward's per-row values, which it saves and passes as _known: the long kernel loads them.
_register_training_autograd(_OP + "_train", torch.ops.myteam.softmax_tl_backward.default)


# ---- the eager training path --------------------------------------------------------------------
class _SoftmaxTlAutograd(torch.autograd.Function):
    """What autograd records for an eager call of softmax_tl() that needs gradients, when nothing else
    watches the call (../_triton_eager.py: eager_autograd_ok): the registered op's forward and backward
    (_softmax_tl_launch, _softmax_tl_backward_launch), their kernels launched directly. The saved tensors
    and the gradients are the registered op's; the host time per step is a fraction of it. The forward also
    saves the per-row values the backward reads (2 a row, in op math: 8 bytes a row of float16, bfloat16
    or float32, 16 of float64), which spares the backward's long kernel the passes over the row that would
    compute them again; softmax_tl_train saves the same where autograd records the registered ops (torch.compile)."""

    @staticmethod
    def forward(ctx, x):
        out, stats = _softmax_tl_launch(x, _softmax_tl_kernel, _softmax_tl_long_kernel, save=True)
        ctx.save_for_backward(x, stats)
        return out

    @staticmethod
    @torch.autograd.function.once_differentiable
    def backward(ctx, grad_out):
        needs = list(ctx.needs_input_grad)
        *arguments, stats = ctx.saved_tensors
        grads = iter(_softmax_tl_backward_launch(grad_out, *arguments, needs, lambda kernel: kernel, known=stats))
        return tuple(next(grads) if need else None for need in needs)

