"""Issue-11 prototype on the GPU: build the CUTLASS sm90 GEMM (mm_sm90.cu, 3 configurations x float16,
bfloat16 x plain, bias + GELU), check it against PyTorch, and time it against cuBLAS (torch.matmul),
the unfused eager epilogue, and torch.compile(mode="max-autotune-no-cudagraphs"), in one process.

    python docs/device/cutlass_proto/bench.py CUTLASS_SOURCE_DIR    # the wheel's cutlass_library/source

CUTLASS_SOURCE_DIR holds include/ and tools/util/include/ (the nvidia-cutlass wheel, unzipped).
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import torch
from torch.utils.cpp_extension import load
from triton.testing import do_bench

HERE = Path(__file__).resolve().parent
CONFIGS = {0: "128x256x64 coop 2x1", 1: "128x128x64 pingpong 1x2", 2: "256x128x64 coop 1x2",
           3: "64x128x64 pingpong 1x1", 4: "128x128x64 pingpong 1x1", 5: "64x128x64 pingpong 1x2",
           6: "128x64x64 pingpong 1x1"}
SHAPES = [(1024, 1024, 1024), (4096, 4096, 4096), (8192, 8192, 8192), (8192, 8192, 1024)]
# PROTO_SMALL=1 (stop 21): configurations 1 and 3-6 only, on problems below one wave of tiles, no compile.
SMALL = os.environ.get("PROTO_SMALL") == "1"
if SMALL:
    CONFIGS = {c: CONFIGS[c] for c in (1, 3, 4, 5, 6)}
    SHAPES = [(512, 512, 512), (1024, 1024, 1024), (1024, 1024, 4096), (2048, 1024, 1024), (2048, 2048, 2048)]
# The fused epilogue's targets (issue 11) are against max-autotune compile at these two shapes only;
# max-autotune costs minutes per shape, so the others time eager only.
COMPILE_SHAPES = {(4096, 4096, 4096), (8192, 8192, 1024)}


def epilogue(acc: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
    h = acc + bias
    return h * torch.sigmoid(1.702 * h)


def fused_reference(a, b, bias):
    return epilogue(torch.matmul(a, b), bias)


def bench(fn) -> float:
    return do_bench(fn, return_mode="median")


def each_config(mod, a, b, bias, expected, describe) -> str:
    """Every configuration on (a, b, bias): its error against ``expected`` and ``describe(time)``."""
    cells = []
    for c in CONFIGS:
        out = mod.mm(a, b, bias, c)
        err = ((out.float() - expected).abs().max() / expected.abs().max()).item()
        t = bench(lambda c=c: mod.mm(a, b, bias, c))
        cells.append(f"c{c} {describe(t)} (rel err {err:.1e})")
    return ", ".join(cells)


def measure(mod, dtype: torch.dtype, m: int, n: int, k: int) -> None:
    a = torch.randn(m, k, device="cuda", dtype=dtype)
    b = torch.randn(k, n, device="cuda", dtype=dtype)
    bias = torch.randn(n, device="cuda", dtype=dtype)
    flops = 2 * m * n * k
    ref = torch.matmul(a.float(), b.float())
    t_cublas = bench(lambda: torch.matmul(a, b))
    cells = each_config(mod, a, b, None, ref, lambda t: f"{t_cublas / t:.2f}x")
    print(f"{str(dtype)[6:]:8} {m}x{n}x{k} plain: cuBLAS {flops / t_cublas / 1e9:.0f} TFLOP/s ({1e3 * t_cublas:.1f} us); {cells}", flush=True)
    t_eager = bench(lambda: fused_reference(a, b, bias))
    t_compile = float("nan")
    if (m, n, k) in COMPILE_SHAPES and not SMALL:
        compiled = torch.compile(fused_reference, mode="max-autotune-no-cudagraphs")
        compiled(a, b, bias)
        t_compile = bench(lambda: compiled(a, b, bias))
    cells = each_config(mod, a, b, bias, epilogue(ref, bias.float()),
                        lambda t: f"{t_eager / t:.2f}x eager, {t_compile / t:.2f}x compile")
    print(f"{str(dtype)[6:]:8} {m}x{n}x{k} bias+gelu: {cells}", flush=True)


def main(source: str) -> None:
    started = time.time()
    mod = load(
        name="mm_proto", verbose=False,
        sources=[str(HERE / "binding.cpp")] + [str(HERE / f"mm_{v}.cu") for v in ("f16", "f16_bias_gelu", "bf16", "bf16_bias_gelu")],
        extra_include_paths=[f"{source}/include", f"{source}/tools/util/include", str(HERE)],
        extra_cuda_cflags=["-O3", "-DNDEBUG", "--expt-relaxed-constexpr", "-gencode=arch=compute_90a,code=sm_90a"]
        + (["-DMM_ONLY_SMALL"] if SMALL else []),
    )
    print(f"built in {time.time() - started:.0f} s on {os.cpu_count()} cores", flush=True)
    for dtype in (torch.float16, torch.bfloat16):
        for m, n, k in SHAPES:
            measure(mod, dtype, m, n, k)
    print("configurations:", CONFIGS)


if __name__ == "__main__":
    main(sys.argv[1])
