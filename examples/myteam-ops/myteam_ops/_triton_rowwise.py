"""What the backward of every Triton rowwise op of this package with weights shares: the splits of the rows
for the weights' gradients, and the column sum that adds them up.

A weight's gradient is a sum over the rows of each row's contribution. The op's weight-gradient kernel runs
one program per block of columns and split of the rows: each adds its split's contributions, tile by tile,
in op-math precision, and writes one row of partial sums; column_sum then adds the splits in order. No
atomics: the gradient has the same bits on every run on the same GPU.
"""

from __future__ import annotations

import torch

try:
    import triton
    import triton.language as tl
except ImportError:  # a CPU-only install: the backward's CPU implementations need none of this
    triton = None

_SMS: dict[int, int] = {}


def splits(device: torch.device, rows: int, column_blocks: int, tile_rows: int) -> tuple[int, int]:
    """How many splits of the rows, and rows per split (a whole number of tiles), so that the weight-gradient
    kernel's programs (column_blocks per split) fill the GPU about 8 times over."""
    index = device.index if device.index is not None else torch.cuda.current_device()
    if index not in _SMS:
        _SMS[index] = torch.cuda.get_device_properties(index).multi_processor_count
    tiles = triton.cdiv(rows, tile_rows)
    count = max(1, min(tiles, triton.cdiv(8 * _SMS[index], column_blocks)))
    per_split = triton.cdiv(tiles, count) * tile_rows
    return triton.cdiv(rows, per_split), per_split


if triton is not None:

    @triton.jit
    def _column_sum_kernel(partial_ptr, out_ptr, parts, cols, BLOCK: tl.constexpr):
        # One program per BLOCK columns; it adds the splits' partial sums in split order.
        offsets = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
        mask = offsets < cols
        rows = partial_ptr + offsets  # pointers into split 0's row; each step moves them one row on
        total = tl.load(rows, mask=mask, other=0.0)
        for _ in range(1, parts):
            rows += cols
            total += tl.load(rows, mask=mask, other=0.0)
        tl.store(out_ptr + offsets, total.to(out_ptr.dtype.element_ty), mask=mask)


def column_sum(partial: torch.Tensor, dtype: torch.dtype, wrap) -> torch.Tensor:
    """The sum over the rows of ``partial`` (splits, cols), rounded once to ``dtype``, on the partial sums' GPU.
    The launch is of wrap(the kernel): wrap_triton inside a registered op, so torch.compile sees it."""
    parts, cols = partial.shape
    out = torch.empty(cols, dtype=dtype, device=partial.device)
    block = 1024
    wrap(_column_sum_kernel)[(triton.cdiv(cols, block),)](partial, out, parts, cols, BLOCK=block, num_warps=4)
    return out
