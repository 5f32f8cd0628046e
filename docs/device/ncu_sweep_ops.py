"""Issue 13: one launch of a sweep op and one of torch.compile's kernel for the same expression, for ncu.

    ncu --kernel-name regex:"OP_kernel|triton_" --metrics ... python3 docs/device/ncu_sweep_ops.py OP [OP ...]

Each op (the sweep package in .device/sweep/sweep-ops, built) runs on float32 inputs of 2^28 elements:
the generated kernel twice and the compiled reference twice, after a warm-up outside the profiled range
(ncu profiles every matching launch; compare the second of each).
"""

from __future__ import annotations

import importlib
import sys

import torch

sys.path.insert(0, ".device/sweep/sweep-ops")
module = importlib.import_module("sweep_ops")
N = 1 << 28
for name in sys.argv[1:]:
    reference = importlib.import_module(f"sweep_ops.ops.{name}").reference
    n_inputs = reference.__code__.co_argcount
    xs = [torch.randn(N, device="cuda") for _ in range(n_inputs)]
    compiled = torch.compile(reference, dynamic=False)
    compiled(*xs)  # compile outside the comparison
    for _ in range(2):
        getattr(module, name)(*xs)
        compiled(*xs)
    torch.cuda.synchronize()
    print(f"{name}: launched", flush=True)
