"""Benchmark myteam::gelu_tl (x * sigmoid(1.702 * x), Triton backend) against PyTorch.

    python benchmarks/bench_gelu_tl.py [--dtypes float32,bfloat16] [--sizes 4096,268435456]
                                          [--json out.json] [--plot out.png] [--device cpu]

An elementwise op is memory-bound, so the figure of merit is bandwidth: bytes actually moved
(1 input read + 1 output written, per element) over time. It races, in the same run:
  eager     reference() in ops/gelu_tl.py, run op by op by PyTorch (one kernel per operation)
  compile   torch.compile(reference): Inductor's fused Triton kernel
  gelu   the same expression on the CUDA C++ backend (myteam_ops.gelu)
and reports the percentage of a device-to-device copy measured in the same run, the practical
roofline: no kernel that reads and writes memory once can beat it by much.
"""

from __future__ import annotations

import os
import sys

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [HERE, os.path.dirname(HERE)]  # harness.py, and the package when it is built in place
import harness  # noqa: E402

# myteam_ops itself is imported by main(), once the arguments are parsed: --help needs no build.

N_INPUTS = 1
DTYPES = ["float32", "float64", "float16", "bfloat16"]
# From launch-bound (2^12) to far above the H100's 50 MB L2 (2^28 elements = 1 GiB in float32).
CUDA_SIZES = [2**12, 2**16, 2**20, 2**24, 2**26, 2**28]
CPU_SIZES = [2**12, 2**16, 2**20, 2**22]


def cases(device: torch.device, dtypes: list[str], sizes: list[int], use_compile: bool):
    import myteam_ops  # imported (or refused, with the reason) by main() already
    from myteam_ops.ops.gelu_tl import reference

    for dtype_name in dtypes:
        dtype = getattr(torch, dtype_name)
        for n in sizes:
            generator = torch.Generator(device).manual_seed(n)
            inputs = [torch.empty(n, dtype=dtype, device=device).normal_(generator=generator) for _ in range(N_INPUTS)]
            impls = {
                "gelu_tl": lambda: myteam_ops.gelu_tl(*inputs),
                "eager": lambda: reference(*inputs),
                "gelu": lambda: myteam_ops.gelu(*inputs),
            }
            if use_compile:
                torch._dynamo.reset()  # one compiled kernel per dtype and size, none reused stale
                compiled = torch.compile(reference, dynamic=False)
                impls["compile"] = lambda: compiled(*inputs)
            source = inputs[0]
            copy_dst = torch.empty_like(source)
            moved = (N_INPUTS + 1) * n * source.element_size()
            yield harness.Case(
                dtype=dtype_name,
                size=n,
                shape=harness.fmt_size(n),
                amount=moved,
                unit="GB/s",
                impls=impls,
                # A copy reads n elements and writes n: 2 * n * itemsize bytes.
                roofline=("copy", 2 * n * source.element_size(), lambda: copy_dst.copy_(source)),
            )


def main(argv=None) -> None:
    args = harness.parse_args(__doc__.splitlines()[0], argv, DTYPES)  # --help ends here
    package = harness.import_package("myteam_ops")  # one line, not a traceback, when it is not built
    device = harness.pick_device(args.device)
    if device.type == "cuda" and not package.ops.gelu_tl.TRITON_AVAILABLE:
        sys.exit("triton is not installed, so gelu_tl cannot run on CUDA; pip install triton, or pass --device cpu")
    sizes = [int(s) for s in args.sizes.split(",")] if args.sizes else (CUDA_SIZES if device.type == "cuda" else CPU_SIZES)
    dtypes = [d.strip() for d in args.dtypes.split(",") if d.strip()]
    unknown = [d for d in dtypes if d not in DTYPES]
    if unknown:
        sys.exit(f"unsupported dtype {unknown[0]!r}; gelu_tl supports {', '.join(DTYPES)}")
    use_compile = device.type == "cuda" and not args.no_compile
    harness.run(cases(device, dtypes, sizes, use_compile), op="gelu_tl", device=device, args=args,
                title="gelu_tl: x * sigmoid(1.702 * x)")


if __name__ == "__main__":
    main()
