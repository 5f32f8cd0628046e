"""Benchmark myteam::linear_gelu (C = epilogue(A @ B, bias)) against the unfused reference in the same run.

    python benchmarks/bench_linear_gelu.py [--dtypes float32,bfloat16] [--sizes 1024,4096]
                                          [--json out.json] [--plot out.png] [--device cpu] [--no-compile]

Square problems N x N x N; the figure of merit is TFLOP/s = 2 N^3 / time. float32 is reported twice:
"float32" with TF32 off for both (true float32 arithmetic, cuBLAS on its SIMT path), and
"float32+tf32" with torch.backends.cuda.matmul.allow_tf32 = True, where cuBLAS uses tensor cores
with 10-bit mantissas; linear_gelu computes in true float32 in both rows, so the second ratio shows
what TF32 buys. Baselines: eager = reference() (torch.matmul, then the epilogue as separate ops),
compile = torch.compile(reference, mode="max-autotune-no-cudagraphs"), which may fuse the epilogue into
a Triton GEMM of its own (the first call autotunes: minutes).
"""

from __future__ import annotations

import os
import sys

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [HERE, os.path.dirname(HERE)]  # harness.py, and the package when it is built in place
import harness  # noqa: E402

import myteam_ops  # noqa: E402
from myteam_ops.ops.linear_gelu import reference  # noqa: E402

DTYPES = ["float32", "float64", "float16", "bfloat16"]
CUDA_SIZES = [512, 1024, 2048, 4096, 8192]
CPU_SIZES = [64, 128, 256, 512]


def modes(dtypes):
    for name in dtypes:
        yield name, name, False
        if name == "float32":
            yield "float32+tf32", name, True


def cases(device, dtypes, sizes, use_compile):
    for label, dtype_name, tf32 in modes(dtypes):
        dtype = getattr(torch, dtype_name)
        for n in sizes:
            generator = torch.Generator(device).manual_seed(n)
            a = torch.randn(n, n, device=device, dtype=dtype, generator=generator)
            b = torch.randn(n, n, device=device, dtype=dtype, generator=generator)
            bias = torch.randn(n, device=device, dtype=dtype, generator=generator)

            def with_tf32(fn, tf32=tf32):
                def run():
                    torch.backends.cuda.matmul.allow_tf32 = tf32
                    return fn()
                return run

            impls = {
                "linear_gelu": with_tf32(lambda: myteam_ops.linear_gelu(a, b, bias)),
                "eager": with_tf32(lambda: reference(a, b, bias)),
            }
            if use_compile:
                torch._dynamo.reset()
                compiled = torch.compile(reference, dynamic=False, mode="max-autotune-no-cudagraphs")
                impls["compile"] = with_tf32(lambda: compiled(a, b, bias))
            yield harness.Case(dtype=label, size=n, shape=f"{n}^3", amount=2.0 * n**3, unit="TFLOP/s", impls=impls)


def main(argv=None) -> None:
    args = harness.parse_args(__doc__.splitlines()[0], argv, DTYPES)
    device = harness.pick_device(args.device)
    if device.type == "cuda" and not myteam_ops.WITH_CUDA:
        sys.exit("linear_gelu was built without CUDA; rebuild with a CUDA toolkit, or pass --device cpu")
    sizes = [int(s) for s in args.sizes.split(",")] if args.sizes else (CUDA_SIZES if device.type == "cuda" else CPU_SIZES)
    dtypes = [d.strip() for d in args.dtypes.split(",") if d.strip()]
    unknown = [d for d in dtypes if d not in DTYPES]
    if unknown:
        sys.exit(f"unsupported dtype {unknown[0]!r}; linear_gelu supports {', '.join(DTYPES)}")
    previous = torch.backends.cuda.matmul.allow_tf32
    try:
        harness.run(cases(device, dtypes, sizes, device.type == "cuda" and not args.no_compile), op="linear_gelu",
                    device=device, args=args, title="linear_gelu: C = (acc + bias) * sigmoid(1.702 * (acc + bias)), acc = A @ B")
    finally:
        torch.backends.cuda.matmul.allow_tf32 = previous


if __name__ == "__main__":
    main()
