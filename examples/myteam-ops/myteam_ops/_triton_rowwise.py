"""What the backward of every Triton rowwise op of this package shares: the row slots of a weight's gradient
and the column sum that adds them up.

A weight's gradient is a sum over the rows of each row's contribution. The backward kernel runs a fixed
number of programs (slots, a few per SM), each taking every slots-th row and adding its rows'
contributions to its own row of partial sums, in op-math precision; column_sum then adds the slots in
order. No atomics: the gradient has the same bits on every run on the same GPU.
"""

from __future__ import annotations

import torch
from torch.library import wrap_triton

try:
    import triton
    import triton.language as tl
except ImportError:  # a CPU-only install: the backward's CPU implementations need none of this
    triton = None

_SMS: dict[int, int] = {}


def slots(device: torch.device, rows: int, block: int) -> int:
    """The number of programs of a backward with weights: enough to fill the GPU (about 32 KiB of each
    column in flight per SM, at least 2 programs per SM so that one waits while another loads), never
    more than the rows."""
    index = device.index if device.index is not None else torch.cuda.current_device()
    if index not in _SMS:
        _SMS[index] = torch.cuda.get_device_properties(index).multi_processor_count
    per_sm = max(2, min(8, 8192 // block))
    return max(1, min(rows, _SMS[index] * per_sm))


if triton is not None:

    @triton.jit
    def _column_sum_kernel(partial_ptr, out_ptr, slots, cols, BLOCK: tl.constexpr):
        # One program per BLOCK columns; it adds the slots' partial sums in slot order.
        offsets = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
        mask = offsets < cols
        total = tl.load(partial_ptr + offsets, mask=mask, other=0.0)
        for slot in range(1, slots):
            total += tl.load(partial_ptr + slot.to(tl.int64) * cols + offsets, mask=mask, other=0.0)
        tl.store(out_ptr + offsets, total.to(out_ptr.dtype.element_ty), mask=mask)


def column_sum(partial: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    """The sum over the slots (rows) of ``partial`` (slots, cols), rounded once to ``dtype``. Called from a
    registered op, on the partial sums' GPU: the launch goes through wrap_triton, so torch.compile sees it."""
    slot_count, cols = partial.shape
    out = torch.empty(cols, dtype=dtype, device=partial.device)
    block = 1024
    wrap_triton(_column_sum_kernel)[(triton.cdiv(cols, block),)](partial, out, slot_count, cols, BLOCK=block, num_warps=4)
    return out
