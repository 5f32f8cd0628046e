"""Benchmark myteam::matmul (C = A @ B) against torch.matmul (cuBLAS) in the same run.

    python benchmarks/bench_matmul.py [--dtypes float32,bfloat16] [--sizes 1024,4096,8192x8192x1024]
                                          [--json out.json] [--plot out.png] [--device cpu] [--no-compile]

Problems are N x N x N, or M x N x K written MxNxK (A is M x K, B is K x N; these are drawn in a panel
of their own); the figure of merit is TFLOP/s = 2 M N K / time. float32 is reported twice:
"float32" with TF32 off for both (true float32 arithmetic, cuBLAS on its SIMT path), and
"float32+tf32" with torch.backends.cuda.matmul.allow_tf32 = True, where cuBLAS uses tensor cores
with 10-bit mantissas; matmul computes in true float32 in both rows, so the second ratio shows
what TF32 buys. Baselines: eager = torch.matmul, compile = torch.compile(torch.matmul).
"""

from __future__ import annotations

import os
import sys

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [HERE, os.path.dirname(HERE)]  # harness.py, and the package when it is built in place
import harness  # noqa: E402

# myteam_ops itself is imported by main(), once the arguments are parsed: --help needs no build.

DTYPES = ["float32", "float64", "float16", "bfloat16"]
CUDA_SIZES = "512,1024,2048,4096,8192,8192x8192x1024"
CPU_SIZES = "64,128,256,512"


def parse_sizes(text):
    """'1024,8192x8192x1024' -> [(1024, 1024, 1024), (8192, 8192, 1024)]; bad input ends with one line."""
    shapes = []
    for token in (t.strip() for t in text.split(",")):
        dims = token.lower().split("x")
        if len(dims) not in (1, 3) or not all(d.isdigit() and int(d) > 0 for d in dims):
            sys.exit(f"bad size {token!r}: write N (an N x N x N product) or MxNxK, with positive integers")
        shapes.append(tuple(int(d) for d in dims) * 3 if len(dims) == 1 else tuple(int(d) for d in dims))
    return shapes


def modes(dtypes):
    for name in dtypes:
        yield name, name, False
        if name == "float32":
            yield "float32+tf32", name, True


def cases(device, dtypes, shapes, use_compile):
    import myteam_ops  # imported (or refused, with the reason) by main() already
    from myteam_ops.ops.matmul import reference

    for label, dtype_name, tf32 in modes(dtypes):
        dtype = getattr(torch, dtype_name)
        for m, n, k in shapes:
            generator = torch.Generator(device).manual_seed(m * 31 + n * 7 + k)
            a = torch.randn(m, k, device=device, dtype=dtype, generator=generator)
            b = torch.randn(k, n, device=device, dtype=dtype, generator=generator)

            def with_tf32(fn, tf32=tf32):
                def run():
                    torch.backends.cuda.matmul.allow_tf32 = tf32
                    return fn()
                return run

            impls = {
                "matmul": with_tf32(lambda: myteam_ops.matmul(a, b)),
                "eager": with_tf32(lambda: reference(a, b)),
            }
            if use_compile:
                torch._dynamo.reset()
                compiled = torch.compile(reference, dynamic=False)
                impls["compile"] = with_tf32(lambda: compiled(a, b))
            square = m == n == k
            yield harness.Case(dtype=label, size=round((m * n * k) ** (1 / 3)), shape=f"{n}^3" if square else f"{m}x{n}x{k}",
                               amount=2.0 * m * n * k, unit="TFLOP/s", impls=impls, group="" if square else "MxNxK")


def main(argv=None) -> None:
    args = harness.parse_args(__doc__.splitlines()[0], argv, DTYPES)  # --help ends here
    package = harness.import_package("myteam_ops")  # one line, not a traceback, when it is not built
    device = harness.pick_device(args.device)
    if device.type == "cuda" and not package.WITH_CUDA:
        sys.exit("matmul was built without CUDA; rebuild with a CUDA toolkit, or pass --device cpu")
    shapes = parse_sizes(args.sizes or (CUDA_SIZES if device.type == "cuda" else CPU_SIZES))
    dtypes = [d.strip() for d in args.dtypes.split(",") if d.strip()]
    unknown = [d for d in dtypes if d not in DTYPES]
    if unknown:
        sys.exit(f"unsupported dtype {unknown[0]!r}; matmul supports {', '.join(DTYPES)}")
    previous = torch.backends.cuda.matmul.allow_tf32
    try:
        harness.run(cases(device, dtypes, shapes, device.type == "cuda" and not args.no_compile), op="matmul",
                    device=device, args=args, title="matmul: C = A @ B")
    finally:
        torch.backends.cuda.matmul.allow_tf32 = previous


if __name__ == "__main__":
    main()
