"""Block-size sweep for the Triton backend's elementwise kernel, and its first-call latency.

    python docs/device/triton_sweep.py            (from the repository root, on the GPU machine)

For the Triton ops of examples/myteam-ops (gelu_tl: unary with exp; muladd_tl: 3 inputs), times the
op with every (BLOCK, num_warps) pair at 2^24 and 2^28 elements per dtype, against torch.compile of
the reference and a device copy, all in the same run (triton.testing.do_bench, median).
Then the first call (Triton compile, cold cache) and a warm call, in fresh processes.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile

import torch
from triton.testing import do_bench

sys.path.insert(0, "examples/myteam-ops")
import myteam_ops  # noqa: E402
from myteam_ops.ops import gelu_tl, muladd_tl  # noqa: E402

CONFIGS = [(512, 4), (1024, 4), (2048, 4), (4096, 4), (1024, 8), (2048, 8), (4096, 8), (8192, 8)]


def bench(fn):
    return do_bench(fn, warmup=25, rep=100, return_mode="median") / 1e3


def host_overhead() -> None:
    """Host microseconds per call at 4096 elements (GPU time negligible): where a launch's time goes."""
    import time

    import triton
    import triton.language as tl

    x = torch.randn(4096, device="cuda")
    out = torch.empty_like(x)
    kernel = gelu_tl._gelu_tl_kernel
    torch._dynamo.reset()
    compiled = torch.compile(gelu_tl.reference, dynamic=False)
    paths = {
        "myteam_ops.gelu_tl(x)": lambda: myteam_ops.gelu_tl(x),
        "torch.ops.myteam.gelu_tl.default(x)": lambda: torch.ops.myteam.gelu_tl.default(x),
        "the op body (_gelu_tl_impl)": lambda: gelu_tl._gelu_tl_impl(x),
        "kernel[grid](...) alone": lambda: kernel[(4,)](x, out, 4096, BLOCK=1024, ACC=tl.float32, num_warps=4),
        "torch.compile(reference)": lambda: compiled(x),
        "CUDA C++ op myteam_ops.gelu(x)": lambda: myteam_ops.gelu(x),
        "torch.empty_like(x)": lambda: torch.empty_like(x),
    }
    for name, fn in paths.items():
        for _ in range(200):
            fn()
        torch.cuda.synchronize()
        t = time.perf_counter()
        for _ in range(2000):
            fn()
        per = (time.perf_counter() - t) / 2000
        torch.cuda.synchronize()
        print(f"host overhead  {name:40} {per * 1e6:6.1f} us/call")
    del triton


def main() -> None:
    print(torch.cuda.get_device_name(), "torch", torch.__version__)
    host_overhead()
    for name, mod, n_in in (("gelu_tl", gelu_tl, 1), ("muladd_tl", muladd_tl, 3)):
        for dtype in (torch.float32, torch.bfloat16, torch.float16, torch.float64):
            for n in (2**24, 2**28):
                xs = [torch.randn(n, dtype=dtype, device="cuda") for _ in range(n_in)]
                moved = (n_in + 1) * n * xs[0].element_size()
                torch._dynamo.reset()
                compiled = torch.compile(mod.reference, dynamic=False)
                t_compile = bench(lambda: compiled(*xs))
                dst = torch.empty_like(xs[0])
                t_copy = bench(lambda: dst.copy_(xs[0]))
                saved = dict(mod._BLOCK), mod._NUM_WARPS
                cells = []
                for block, warps in CONFIGS:
                    mod._BLOCK = {k: block for k in saved[0]}
                    mod._NUM_WARPS = warps
                    t = bench(lambda: getattr(myteam_ops, name)(*xs))
                    cells.append(f"{block}/{warps}:{t_compile / t:.3f}")
                mod._BLOCK, mod._NUM_WARPS = saved
                t_default = bench(lambda: getattr(myteam_ops, name)(*xs))
                print(f"{name:9} {str(dtype)[6:]:8} 2^{n.bit_length() - 1}  default {t_compile / t_default:.3f}x compile "
                      f"({moved / t_default / 1e9:.0f} GB/s, copy {2 * n * xs[0].element_size() / t_copy / 1e9:.0f} GB/s)  "
                      + " ".join(cells))
    # First call (compile) and a warm call, each in a fresh process with an empty Triton cache.
    code = (
        "import time, torch, sys; sys.path.insert(0, 'examples/myteam-ops'); import myteam_ops;"
        "x = torch.randn(1 << 20, device='cuda'); torch.cuda.synchronize();"
        "t = time.perf_counter(); myteam_ops.gelu_tl(x); torch.cuda.synchronize(); first = time.perf_counter() - t;"
        "t = time.perf_counter(); myteam_ops.gelu_tl(x); torch.cuda.synchronize(); warm = time.perf_counter() - t;"
        "print(f'first call {first * 1e3:.1f} ms, warm call {warm * 1e6:.1f} us')"
    )
    with tempfile.TemporaryDirectory() as cache:
        for label in ("cold Triton cache", "warm Triton cache (disk)"):
            out = subprocess.run([sys.executable, "-c", code], env=dict(os.environ, TRITON_CACHE_DIR=cache),
                                 capture_output=True, text=True)
            print(f"gelu_tl {label}: {out.stdout.strip() or out.stderr[-500:]}")


if __name__ == "__main__":
    main()
