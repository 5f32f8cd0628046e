"""Benchmark myteam::log_softmax (x - max(x) - log(sum(exp(x - max(x)))), CUDA C++ backend, rowwise) against PyTorch.

    python benchmarks/bench_log_softmax.py [--dtypes float32,bfloat16] [--sizes 16777216,268435456]
                                          [--cols 1024,4096] [--json out.json] [--plot out.png] [--device cpu]

A rowwise op is memory-bound, so the figure of merit is bandwidth: bytes actually moved (1 input
read, 1 output written) over time. --sizes is the number of elements of each input in all, --cols the
row length: each size runs with every row length. It races, in the same run:
  eager     reference() in ops/log_softmax.py, run op by op by PyTorch
  compile   torch.compile(reference): Inductor's fused reduction kernel
  fused     torch.log_softmax(x, dim=-1), PyTorch's own kernel for this expression
and reports the percentage of a device-to-device copy of one input measured in the same run, the
practical roofline.
"""

from __future__ import annotations

import argparse
import os
import sys

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [HERE, os.path.dirname(HERE)]  # harness.py, and the package when it is built in place
import harness  # noqa: E402

# myteam_ops itself is imported by main(), once the arguments are parsed: --help needs no build.

N_INPUTS = 1
N_WEIGHTS = 0
DTYPES = ["float32", "float64", "float16", "bfloat16"]
# Elements of each input in all: from 2^24 (64 MiB of float32, above the H100's 50 MB L2) to 2^28.
CUDA_SIZES = [2**24, 2**26, 2**28]
CPU_SIZES = [2**18, 2**22]
# Row lengths: held in registers up to 16384 on the CUDA backend, multi-pass above.
CUDA_COLS = [1024, 4096, 16384, 65536]
CPU_COLS = [1024, 16384]


def cases(device: torch.device, dtypes: list[str], sizes: list[int], cols_list: list[int], use_compile: bool):
    import myteam_ops  # imported (or refused, with the reason) by main() already
    from myteam_ops.ops.log_softmax import reference

    for dtype_name in dtypes:
        dtype = getattr(torch, dtype_name)
        for n in sizes:
            for cols in cols_list:
                rows = max(1, n // cols)
                generator = torch.Generator(device).manual_seed(n + cols)
                args = [torch.empty(rows, cols, dtype=dtype, device=device).uniform_(0.5, 2.5, generator=generator) for _ in range(N_INPUTS)]
                args += [torch.empty(cols, dtype=dtype, device=device).uniform_(0.5, 2.5, generator=generator) for _ in range(N_WEIGHTS)]
                impls = {
                    "log_softmax": lambda args=args: myteam_ops.log_softmax(*args),
                    "eager": lambda args=args: reference(*args),
                }
                if use_compile:
                    torch._dynamo.reset()  # one compiled kernel per dtype and shape, none reused stale
                    compiled = torch.compile(reference, dynamic=False)
                    impls["compile"] = lambda args=args, compiled=compiled: compiled(*args)
                x, = args
                impls["fused"] = lambda x=x: torch.log_softmax(x, dim=-1)
                source = args[0]
                copy_dst = torch.empty_like(source)
                elements = rows * cols
                moved = ((N_INPUTS + 1) * elements + N_WEIGHTS * cols) * source.element_size()
                yield harness.Case(
                    dtype=dtype_name,
                    size=cols,
                    shape=f"{rows}x{cols}",
                    amount=moved,
                    unit="GB/s",
                    impls=impls,
                    # A copy of one input: 2 * elements * itemsize bytes.
                    roofline=("copy", 2 * elements * source.element_size(), lambda: copy_dst.copy_(source)),
                    group=harness.fmt_size(elements),
                )


def main(argv=None) -> None:
    def row_lengths(parser: argparse.ArgumentParser) -> None:
        parser.add_argument("--cols", default=None, help="comma-separated row lengths (default: the script's)")

    args = harness.parse_args(__doc__.splitlines()[0], argv, DTYPES, extra=row_lengths)  # --help ends here
    package = harness.import_package("myteam_ops")  # one line, not a traceback, when it is not built
    device = harness.pick_device(args.device)
    if device.type == "cuda" and not package.WITH_CUDA:
        sys.exit("log_softmax was built without CUDA; rebuild with a CUDA toolkit, or pass --device cpu")
    sizes = [int(s) for s in args.sizes.split(",")] if args.sizes else (CUDA_SIZES if device.type == "cuda" else CPU_SIZES)
    cols = [int(c) for c in args.cols.split(",")] if args.cols else (CUDA_COLS if device.type == "cuda" else CPU_COLS)
    dtypes = [d.strip() for d in args.dtypes.split(",") if d.strip()]
    unknown = [d for d in dtypes if d not in DTYPES]
    if unknown:
        sys.exit(f"unsupported dtype {unknown[0]!r}; log_softmax supports {', '.join(DTYPES)}")
    use_compile = device.type == "cuda" and not args.no_compile
    harness.run(cases(device, dtypes, sizes, cols, use_compile), op="log_softmax", device=device, args=args,
                title="log_softmax: x - max(x) - log(sum(exp(x - max(x))))", xlabel="row length")


if __name__ == "__main__":
    main()
