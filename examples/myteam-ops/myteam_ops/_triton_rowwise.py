"""What the Triton rowwise ops of this package share: how many programs of a kernel the GPU holds (resident); from
it, the warps of the forward's rows kernel at the longest rows, or the long kernel instead (rows_warps), and the
same choice for the backward's register kernels (backward_fit), and whether the kernel of one program a row
pipelines its rows instead (backward_pipeline); and, for
the backward of an op with weights, the weights' kernel's tile (weight_tile), the splits of the rows for it (splits)
and the column sum that adds up the partial sums of the weights' gradients (column_sum); and the autograd formula of
an op's training forward, <op>_train (register_training_autograd), with the check of the values it saves
(check_known).

A weight's gradient is a sum over the rows of each row's contribution. Where a row and the weights' sums fit in
registers, the backward's row kernel adds them itself: it runs as many programs as the GPU holds (resident),
and each sums the rows it takes, in order, and writes one row of partial sums. Otherwise the op's
weight-gradient kernel reads the rows again: one program per block of columns and split of the rows (splits)
adds its split's contributions, tile by tile, and writes one row of partial sums. column_sum then adds the rows
of partial sums in a fixed order. No atomics: the gradient has the same bits on every run on the same GPU.
"""

from __future__ import annotations

import warnings

import torch

from ._triton_eager import cdiv

try:
    import triton
    import triton.language as tl
    from triton.runtime.errors import OutOfResources
except ImportError:  # a CPU-only install: the backward's CPU implementations need none of this
    triton = None

_SMS: dict[int, int] = {}
_HELD: dict[tuple, tuple[int, int]] = {}


def _index(device: torch.device) -> int:
    return device.index if device.index is not None else torch.cuda.current_device()


def _sm_count(device: torch.device) -> int:
    index = _index(device)
    if index not in _SMS:
        _SMS[index] = torch.cuda.get_device_properties(index).multi_processor_count
    return _SMS[index]


def _key(kernel, args: list, options: dict, device: torch.device) -> tuple:
    """The cache key of ``kernel`` compiled for ``args`` and ``options`` on ``device``'s GPU."""
    return (kernel, _index(device), *map(str, args), *sorted(options.items()))


# The launches' answers (backward_launch, weight_tile) for the calls seen, by everything they read: an answer asks
# resident() about up to four builds of a kernel, each a cached count behind a key of 15-25 arguments made into
# strings: 3-30 microseconds of the host's time a call in Python, 35-70 a backward whose rows kernel spills (three
# calls), where the GPU runs a backward of a few hundred. A call seen before costs one lookup, 1.3-5. At most
# ANSWERS_KEPT are kept, the oldest dropped first, so that a stream of batch sizes cannot grow them without bound.
# Calls with a symbolic length (torch.compile's dynamic shapes) are answered without compiling anything, and not
# kept.
ANSWERS_KEPT = 1024
_ANSWERS: dict[tuple, object] = {}
_UNSEEN = object()


def _answer(key: tuple | None, compute):
    """compute(), kept under ``key`` (None: computed every call)."""
    if key is None:
        return compute()
    found = _ANSWERS.get(key, _UNSEEN)
    if found is _UNSEEN:
        if len(_ANSWERS) >= ANSWERS_KEPT:
            del _ANSWERS[next(iter(_ANSWERS))]
        found = _ANSWERS[key] = compute()
    return found


def resident(kernel, args: list, options: dict, device: torch.device) -> tuple[int, int]:
    """How many programs of ``kernel`` the GPU of ``device`` runs at once, and the bytes a thread of it spills to
    local memory: from the kernel compiled (not launched) for ``args`` (a torch dtype for each tensor argument,
    then the other arguments as the launch passes them) and ``options`` (its constexprs and num_warps).

    A persistent launch (a program per row of partial sums, every program looping over its rows) wants exactly
    this many programs: more would run in a second wave, fewer would leave SMs idle. What fits an SM is the
    least of its threads, registers and shared memory over what a program takes of each.

    Loading the compiled kernel is what reports its registers and spills (CompiledKernel._init_handles, not a
    public call of Triton). A Triton without it, or without n_regs and n_spills, reports (0, 1): as if the
    kernel spilled, so the launches take the kernels that need no count, with a warning."""
    key = _key(kernel, args, options, device)
    if key not in _HELD:
        compiled = kernel.warmup(*args, grid=(1,), **options)
        load = getattr(compiled, "_init_handles", None)
        if load is not None:
            load()
        if not (isinstance(getattr(compiled, "n_regs", None), int) and isinstance(getattr(compiled, "n_spills", None), int)):
            warnings.warn(f"{getattr(kernel, '__name__', 'a kernel')}: this Triton ({triton.__version__}) does not report a compiled kernel's "
                          "registers and spills; the launches that read them take the kernels that need no count (16 warps for "
                          "the forward's longest rows, a second pass over the rows for the weights' gradients)", stacklevel=2)
            _HELD[key] = (0, 1)
            return _HELD[key]
        props = torch.cuda.get_device_properties(key[1])
        warps = options["num_warps"]
        by_threads = props.max_threads_per_multi_processor // (32 * warps)
        registers = -(-max(compiled.n_regs, 1) * 32 // 256) * 256  # a warp's registers, allocated 256 at a time
        by_registers = props.regs_per_multiprocessor // (registers * warps)
        by_shared = props.shared_memory_per_multiprocessor // max(compiled.metadata.shared, 1)
        per_sm = max(1, min(by_threads, by_registers, by_shared))
        _HELD[key] = (per_sm * props.multi_processor_count, compiled.n_spills)
    return _HELD[key]


def rows_warps(kernel, args: list, options: dict, device: torch.device, wider: int) -> int | None:
    """The warps to launch ``kernel`` with (a forward rows kernel holding a whole row in registers), or None where
    it should not be launched at all. Options' num_warps, unless at it only one program fits an SM (each thread
    holds so many elements, and so many values of them stay live, that the registers allow no second program:
    an SM then has 16 warps to hide its loads' latency with, and the row's reductions stall them all):
      * then ``wider`` warps, where each thread holds half as many elements, if the kernel spills at most
        FORWARD_SPILL_TOLERATED bytes a thread there;
      * else None if it spills more at options' warps too: the caller then takes the long kernel, which streams
        the row in chunks with many programs an SM (its second reads of a row of 32 KB come from L2).
    On an H100, at rows of 16384 in float16 and bfloat16, the first rule runs expressions drawn from the grammar
    6% faster than 16 warps everywhere, and up to 1.44x faster in the cells it changes (none slower by more than
    1%), where 32 warps everywhere runs LayerNorm (64 registers, two programs an SM) 25% slower. The second takes
    a spilling expression from 41% to 61% of a copy. Where options' warps are ``wider`` already (float32 and float64
    rows of 16384 start at 32 warps), the long kernel takes the rows where that build spills more than
    WIDE_SPILL_TOLERATED. ``args`` and ``options`` are as resident() takes them; where the compiled kernel's counts
    are unknown (resident's (0, 1)), options' warps."""
    warps = options["num_warps"]
    held, spills = resident(kernel, args, options, device)
    if held == 0 or held > _sm_count(device):
        return warps
    if wider <= warps:
        return warps if spills <= WIDE_SPILL_TOLERATED else None
    _, wide_spills = resident(kernel, args, {**options, "num_warps": wider}, device)
    if wide_spills <= FORWARD_SPILL_TOLERATED:
        return wider
    return warps if spills <= FORWARD_SPILL_TOLERATED else None


# The bytes a thread of the forward's rows kernel may spill at rows of 16384 before the long kernel takes them. On
# an H200, in float16 and bfloat16, rows kernels spilling 2-12 bytes at 32 warps mostly run 1.28-1.39x faster than
# the long kernel (some as fast, some 1.05-1.08x slower); one spilling 20 bytes runs 1.11-1.12x slower.
FORWARD_SPILL_TOLERATED = 16
# The same for a rows kernel that starts at 32 warps (float32 and float64 at rows of 16384): past the 256 bytes its
# 64 registers hold, the long kernel takes the rows. On an H100 a drawn expression of four inputs and three weights
# spilled 404 bytes a thread there in float32 and ran its forward at about 16% of a copy, its bfloat16 twin on the long
# kernel at several times that (both estimated: forward+backward less the backward alone); expressions spilling 48-104
# bytes held 1.13-1.80x of compile forward+backward, so they stay (where the long kernel overtakes them between the two
# tolerances is not measured).
WIDE_SPILL_TOLERATED = 256


# The bytes a thread of a backward register kernel may spill before the next kernel takes its rows. On an H200,
# kernels of one program a row spilling 38-52 bytes at rows of 8192 hold their own, and those spilling 108-434
# bytes at rows of 16384 run 1.6-4x slower than the long kernel's passes, which re-read the row from L2; rows
# kernels spilling 4-90 bytes at rows of 4096 run up to 2.1x faster than the kernel of one program a row, which
# spills nothing but leaves the weights' gradients to a second read of the rows. (The CUDA backward tolerates
# about 300 bytes: a Triton kernel spills row-sized values, written and read again for every element.)
SPILL_TOLERATED = 64
# The rows kernel at rows longer than 4096 (16 warps or more): there, spilling 44-104 bytes, it runs 1.3-1.5x slower
# than the kernel of one program a row, and spilling 2-16 bytes as fast or faster.
ROWS_SPILL_TOLERATED_LONG = 16


def backward_fit(kernel, args: list, options: dict, device: torch.device, prefetches: bool = False) -> tuple[int, int] | None:
    """The warps to launch ``kernel`` with (a backward register kernel: the rows kernel, which ``prefetches`` each
    next row, or the kernel of one program a row) and how many of its programs the GPU then holds, or None where
    it should not be launched. With the bytes a thread may spill (SPILL_TOLERATED; ROWS_SPILL_TOLERATED_LONG for
    the rows kernel at rows longer than 4096):
      * twice options' warps (at most 32), each thread holding half as many elements, where they spill no more
        than tolerated and at options' warps either the kernel spills more than that, or one program fills an SM
        (its warps are all an SM has to hide the loads' latency with, and the row's reductions stall them all)
        unless the kernel prefetches its next row and spills nothing. On an H200 at rows of 4096 the kernel of
        one program a row runs 4-44% faster at 16 warps than at 8 in most cells; the rows kernel, 1.3-1.8x
        faster in most cells where it spills at 8 warps, and 5-24% slower in most where it spills nothing;
      * else options' warps, where it spills no more than tolerated there;
      * else None: the caller takes the next kernel (the kernel of one program a row after the rows kernel, the
        long kernel's passes after that).
    ``args`` and ``options`` are as resident() takes them, the row length last. Where it is a symbol
    (torch.compile's dynamic shapes: nothing can be compiled ahead) or the compiled kernel's counts are unknown
    (resident's (0, 1)), options' warps and 0 programs: the caller then takes the kernel that needs no count."""
    warps = options["num_warps"]
    if not isinstance(args[-1], int):
        return warps, 0
    held, spills = resident(kernel, args, options, device)
    if held == 0:
        return warps, 0
    tolerated = ROWS_SPILL_TOLERATED_LONG if prefetches and options["BLOCK"] > 4096 else SPILL_TOLERATED
    wider = min(32, 2 * warps)
    fits = spills <= tolerated
    crowded = held <= _sm_count(device) and not (prefetches and spills == 0)
    if wider > warps and (crowded or not fits):
        wide_held, wide_spills = resident(kernel, args, {**options, "num_warps": wider}, device)
        if wide_spills <= tolerated:
            return wider, wide_held
    return (warps, held) if fits else None



# Where one program of a backward register kernel fills an SM (backward_fit: no more programs held than
# PIPELINE_PROGRAMS_PER_SM an SM), its warps are all the SM has to hide the loads' latency with, and the row's
# reductions, each waiting on the one before, stall them with no other row's loads in flight: on an H200, at rows of
# 4096, such a kernel of one program a row runs at 17-65% of a copy; the rows kernel (ops with weights) holds the
# next row in registers itself, at up to 255 a thread and spilling up to 900 bytes. The launch then runs as
# many programs as the GPU holds of the kernel compiled at PIPELINE_STAGES, each looping over its rows, and Triton's
# software pipeline copies a program's next row into shared memory (cp.async) while the program computes its row.
# The copies cost shared memory (a row of each tensor read: 16-82 KB at rows of 4096 for ops of one to four
# inputs), not registers (0-8 more a thread). Rows of whole 16-byte vectors
# take cp.async (a row length a multiple of 16 elements, tensors 16-byte aligned: the launch specialises on both);
# others run the same loop without it. On an H200, forward+backward runs 8-19% faster where it pipelines (ops at
# rows of 4096 drawn from the grammar), and as before elsewhere.
# The rows kernel (ops with weights) holds its next row in registers at STAGES 1; its staged build frees them (at
# rows of 4096: 165-227 registers a thread against 224-255, spills of 288-768 bytes cut to 56-168), so it runs
# staged only where its unstaged build spills: one that spills nothing already hides the next row's loads. On an
# H200, staging a rows kernel that fills an SM runs forward+backward 4-29% faster where its unstaged build spills,
# and 8-15% slower where it spills nothing.
PIPELINE_PROGRAMS_PER_SM = 1
PIPELINE_STAGES = 2
_PIPELINED: dict[tuple, tuple[int, int]] = {}


def backward_pipeline(kernel, args: list, options: dict, device: torch.device, rows, held: int,
                      persistent: bool = False) -> tuple[int, int]:
    """How many programs to launch ``kernel`` on (a backward kernel that loops over its rows) for ``rows`` rows, and
    its STAGES. Unstaged (STAGES 1): one program a row, or, for a ``persistent`` kernel (the rows kernel), as many
    as the GPU holds (``held``, backward_fit's programs at options' warps), at most the rows. Staged, unless
    ``held`` is more than PIPELINE_PROGRAMS_PER_SM an SM: where the kernel compiled at PIPELINE_STAGES fits an SM's
    shared memory and spills no more than SPILL_TOLERATED bytes a thread, as many programs as the GPU holds of it,
    at PIPELINE_STAGES, where that is fewer than the rows; a ``persistent`` kernel, which holds its next row in
    registers itself, only where that unstaged build spills. ``args`` and ``options`` are as resident() takes them,
    the row length last. Unstaged too where the rows or the row length are a symbol (torch.compile's dynamic
    shapes), where the counts are unknown (held 0), and, with a warning, where this Triton fails to compile the
    staged kernel."""
    unstaged = (min(rows, held) if persistent and held else rows, 1)
    if not (isinstance(rows, int) and isinstance(args[-1], int)) or held == 0 \
            or held > PIPELINE_PROGRAMS_PER_SM * _sm_count(device):
        return unstaged
    if persistent and resident(kernel, args, options, device)[1] == 0:
        return unstaged  # its registers already hold the next row without spilling
    held, spills = _staged(kernel, args, options, device)
    programs = held if spills <= SPILL_TOLERATED else 0
    return (programs, PIPELINE_STAGES) if 0 < programs < rows else unstaged


# Where the rows kernel spills past the tolerance at both of backward_fit's warps, the rows would take the kernel of
# one program a row and a second read of the rows for the weights' sums (the weights' kernel). Its staged build holds
# no next row in registers (on an H200, rows kernels at rows of 4096 that spill 60-108 bytes a thread unstaged at 16
# warps otherwise take that second read, at 22-37% of a copy), so the launch tries it first.
def backward_staged(kernel, args: list, options: dict, device: torch.device, rows) -> tuple[int, int] | None:
    """The warps and programs to launch ``kernel`` (the rows kernel) with at PIPELINE_STAGES where backward_fit
    refused its unstaged build: twice options' warps (at most 32), else options' warps, the first whose build at
    PIPELINE_STAGES fits an SM's shared memory, spills no more than backward_fit tolerates, and is held by the GPU in
    fewer programs than there are rows; else None (the caller takes the kernel of one program a row). ``args`` and
    ``options`` are as resident() takes them, the row length last. None where the rows or the row length are a
    symbol (torch.compile's dynamic shapes) or the counts are unknown."""
    if not (isinstance(rows, int) and isinstance(args[-1], int)):
        return None
    tolerated = ROWS_SPILL_TOLERATED_LONG if options["BLOCK"] > 4096 else SPILL_TOLERATED
    for warps in dict.fromkeys((min(32, 2 * options["num_warps"]), options["num_warps"])):
        held, spills = _staged(kernel, args, {**options, "num_warps": warps}, device)
        if 0 < held < rows and spills <= tolerated:
            return warps, held
    return None


def backward_launch(kernel, args: list, options: dict, device: torch.device, rows,
                    rows_kernel: bool = False) -> tuple[int, int, int] | None:
    """How to launch a backward register kernel for ``rows`` rows: its warps, programs and STAGES, or None where the
    caller takes the next kernel. ``rows_kernel``: ``kernel`` is the rows kernel (ops with weights: persistent, its
    next row prefetched), else the kernel of one program a row. backward_fit picks the warps of its unstaged build,
    and backward_pipeline the programs and STAGES at them; where backward_fit refuses the rows kernel's unstaged
    build, its staged build (backward_staged), at PIPELINE_STAGES; where the rows kernel's counts are unknown, None
    (the kernel of one program a row needs none). ``args`` and ``options`` are as resident() takes them. Each
    answer is kept (_answer)."""
    known = isinstance(rows, int) and isinstance(args[-1], int)
    key = ("launch", kernel, _index(device), *args, *options.items(), rows, rows_kernel) if known else None
    return _answer(key, lambda: _launch(kernel, args, options, device, rows, rows_kernel))


def _launch(kernel, args: list, options: dict, device: torch.device, rows, rows_kernel: bool) -> tuple[int, int, int] | None:
    """backward_launch's answer, computed."""
    fit = backward_fit(kernel, args, options, device, prefetches=rows_kernel)
    if fit is None:
        staged = backward_staged(kernel, args, options, device, rows) if rows_kernel else None
        return None if staged is None else (*staged, PIPELINE_STAGES)
    warps, held = fit
    if rows_kernel and held == 0:
        return None
    programs, stages = backward_pipeline(kernel, args, {**options, "num_warps": warps}, device, rows, held,
                                         persistent=rows_kernel)
    return warps, programs, stages


def _staged(kernel, args: list, options: dict, device: torch.device) -> tuple[int, int]:
    """resident() of ``kernel`` at PIPELINE_STAGES (cached): the programs the GPU holds and the bytes a thread spills;
    (0, 0) where it does not build: where its rows in shared memory do not fit an SM, and, with a warning, where
    this Triton fails to build it."""
    key = _key(kernel, args, options, device)
    if key not in _PIPELINED:
        try:
            _PIPELINED[key] = resident(kernel, args, {**options, "STAGES": PIPELINE_STAGES}, device)
        except OutOfResources:  # its rows in shared memory do not fit an SM
            _PIPELINED[key] = (0, 0)
        except Exception as error:  # a Triton whose pipeliner cannot build it: the rows run unstaged
            reason = (str(error).strip().splitlines() or [""])[0][:200]
            warnings.warn(f"{getattr(kernel, '__name__', 'a kernel')}: this Triton ({triton.__version__}) fails to build the kernel "
                          f"with STAGES={PIPELINE_STAGES} ({type(error).__name__}: {reason}); its rows run unstaged",
                          stacklevel=4)
            _PIPELINED[key] = (0, 0)
    return _PIPELINED[key]

# The weights' kernel's tile (rows, columns, warps), and the narrower one it takes where the wide one spills more
# than WEIGHT_SPILL_TOLERATED bytes a thread or leaves an SM fewer than WEIGHT_PROGRAMS_PER_SM programs. The kernel
# keeps a running sum for each weight in every lane of the tile and reduces over the tile's rows once, at the end,
# so a tile's rows cost registers, not a reduction every tile, and every value the gradients share is a tile too.
# At 16 x 64 and 4 warps a thread holds 8 elements of each. An SM hides its loads' latency with the warps of the
# programs it holds: past 128 registers a thread only 3 programs (12 warps) fit, and the narrow tile, at about
# half the registers, fits 4 to 7. On an H200 at rows of 16384 and 65536, ops drawn from the grammar run as fast or
# faster (up to 1.50x) at 8 x 64 wherever 16 x 64 holds 3 programs an SM or fewer, and at most 2.3% faster, up to
# 1.12x slower, where it holds 4 or more; the cells this rule narrows run 1.00-1.34x faster than at 16 x 64. Ops
# spill 0-8 bytes at 16 x 64; at 64 x 64 they spill up to 832 bytes and run up to 9.4x slower.
WEIGHT_TILE = (16, 64, 4)
WEIGHT_TILE_NARROW = (8, 64, 4)
WEIGHT_SPILL_TOLERATED = 16
WEIGHT_PROGRAMS_PER_SM = 4


def weight_tile(kernel, dtypes: list, rows: int, cols: int, acc, device: torch.device) -> tuple[int, int, int]:
    """The tile (rows, columns, warps) to launch the weights' kernel ``kernel`` with: WEIGHT_TILE, unless the kernel
    compiled for it (``dtypes``: a torch dtype for each tensor argument and 1 for each flag, in order; then the
    launch's rows, cols and rows per split) spills more than WEIGHT_SPILL_TOLERATED bytes a thread or fits fewer
    than WEIGHT_PROGRAMS_PER_SM programs an SM, then WEIGHT_TILE_NARROW. Under torch.compile's dynamic shapes,
    where a length is a symbol, nothing is compiled ahead: WEIGHT_TILE; where the compiled kernel's counts are
    unknown (resident's (0, 1)), WEIGHT_TILE too. Each answer is kept (_answer)."""
    if not (isinstance(rows, int) and isinstance(cols, int)):
        return WEIGHT_TILE
    return _answer(("tile", kernel, _index(device), *dtypes, rows, cols, acc),
                   lambda: _tile(kernel, dtypes, rows, cols, acc, device))


def _tile(kernel, dtypes: list, rows: int, cols: int, acc, device: torch.device) -> tuple[int, int, int]:
    """weight_tile's answer, computed."""
    tile_rows, tile_cols, warps = WEIGHT_TILE
    _, per_split = splits(device, rows, cdiv(cols, tile_cols), tile_rows)
    held, spilled = resident(kernel, [*dtypes, rows, cols, per_split],
                             dict(BLOCK_R=tile_rows, BLOCK_C=tile_cols, ACC=acc, num_warps=warps), device)
    if held == 0:
        return WEIGHT_TILE
    crowded = held < WEIGHT_PROGRAMS_PER_SM * _sm_count(device)
    return WEIGHT_TILE_NARROW if spilled > WEIGHT_SPILL_TOLERATED or crowded else WEIGHT_TILE


def splits(device: torch.device, rows: int, column_blocks: int, tile_rows: int) -> tuple[int, int]:
    """How many splits of the rows, and rows per split (a whole number of tiles), so that the weight-gradient
    kernel's programs (column_blocks per split) fill the GPU about 8 times over."""
    tiles = cdiv(rows, tile_rows)
    count = max(1, min(tiles, cdiv(8 * _sm_count(device), column_blocks)))
    per_split = cdiv(tiles, count) * tile_rows
    return cdiv(rows, per_split), per_split


if triton is not None:

    @triton.jit
    def _column_sum_kernel(partial_ptr, out_ptr, parts, cols, BLOCK_P: tl.constexpr, BLOCK_C: tl.constexpr):
        # One program per BLOCK_C columns adds the parts' rows of partial sums, BLOCK_P rows a step: each step
        # sums its tile over its rows (a tree of fixed shape), and the steps add up in order.
        columns = tl.program_id(0).to(tl.int64) * BLOCK_C + tl.arange(0, BLOCK_C)
        column_mask = columns < cols
        total = tl.zeros((BLOCK_C,), partial_ptr.dtype.element_ty)
        for start in range(0, parts, BLOCK_P):
            part = start + tl.arange(0, BLOCK_P)
            mask = (part < parts)[:, None] & column_mask[None, :]
            tile = tl.load(partial_ptr + part.to(tl.int64)[:, None] * cols + columns[None, :], mask=mask, other=0.0)
            total += tl.sum(tile, axis=0)
        tl.store(out_ptr + columns, total.to(out_ptr.dtype.element_ty), mask=column_mask)


def column_sum(partial: torch.Tensor, dtype: torch.dtype, wrap) -> torch.Tensor:
    """The sum over the rows of ``partial`` (parts, cols), rounded once to ``dtype``, on the partial sums' GPU.
    The launch is of wrap(the kernel): wrap_triton inside a registered op, so torch.compile sees it. Narrow
    column blocks of many rows keep many programs, each with few steps, however many parts there are."""
    parts, cols = partial.shape
    out = torch.empty(cols, dtype=dtype, device=partial.device)
    block_parts, block_cols = 128, 32
    wrap(_column_sum_kernel)[(cdiv(cols, block_cols),)](partial, out, parts, cols, BLOCK_P=block_parts,
                                                               BLOCK_C=block_cols, num_warps=4)
    return out


def register_training_autograd(name: str, backward) -> None:
    """Registers the autograd formula of the training forward ``name`` (<namespace>::<op>_train: the output and the
    forward's per-row values its backward reads, rows x k in op math): it saves the arguments and those values, which
    have no gradient, and its backward calls ``backward`` (torch.ops.<namespace>.<op>_backward.default) with them as
    _known, for the arguments that need a gradient (ctx.needs_input_grad), so that its long kernel loads them."""
    def setup_context(ctx, inputs, output) -> None:
        _, stats = output
        ctx.mark_non_differentiable(stats)
        ctx.save_for_backward(*inputs, stats)

    def formula(ctx, grad_out: torch.Tensor, _grad_stats: torch.Tensor | None):
        needs = list(ctx.needs_input_grad)
        *arguments, stats = ctx.saved_tensors
        grads = iter(backward(grad_out, *arguments, needs, stats))
        return tuple(next(grads) if need else None for need in needs)

    torch.library.register_autograd(name, formula, setup_context=setup_context)


def check_known(known: torch.Tensor | None, grad: torch.Tensor, count: int, op_name: str) -> None:
    """The check of <op>_backward's _known: the forward's per-row values as <op>_launch saves them, rows x ``count``,
    in op math, on the gradient's device (None: the backward computes them)."""
    if known is None:
        return
    cols = grad.shape[-1]
    shape = [grad.numel() // cols if cols else 0, count]
    opmath = torch.float64 if grad.dtype == torch.float64 else torch.float32
    if known.device != grad.device or known.dtype != opmath or list(known.shape) != shape:
        raise RuntimeError(f"{op_name}_backward: _known is {known.dtype} of shape {list(known.shape)} on {known.device}, but "
                           f"the forward's per-row values are {opmath} of shape {shape} on {grad.device}")
