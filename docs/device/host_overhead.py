"""The host's time per call of a generated op (issue 29, stop 70): what a step costs the CPU, apart from the GPU.

Stop 70 found that the backward alone of one launch, timed twice, moved by up to 2.1x while the profiler's kernel
times did not move at all (docs/results/stop70/placement_*.txt): the host, not the GPU, set the pace. This times the
host: rows few enough (--rows) that every kernel finishes before the host issues the next, so the wall time of a
loop of calls, synchronised once at the end, is the host's time per call. For each op, dtype and row length:

  fwd+bwd ours      out = op(*x); out.backward(g)    (the package's function and its generated backward)
  fwd+bwd compile   the same through torch.compile(reference)
  fwd ours          the package's function alone, no grad
  bwd op            torch.ops.<ns>.<op>_backward alone (the registered op, as backward_bench.py's "bwd alone")

then, with --profile, where the host's time of ours' fwd+bwd goes (cProfile, the 25 largest by own time).

    python docs/device/host_overhead.py PACKAGE_DIR --ops r05_tl,r06_tl [--cols 16384,65536] [--rows 8] [--profile]
"""

from __future__ import annotations

import argparse
import cProfile
import io
import pstats
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from backward_bench import import_package  # noqa: E402


def per_call(torch, fn, calls: int) -> float:
    """Microseconds of wall time per call of fn over ``calls`` calls, synchronised once before and after: the clock
    stops after the GPU has finished (triton_host.py's per_call stops it before, timing the launches alone)."""
    for _ in range(5):
        fn()
    torch.cuda.synchronize()
    start = time.perf_counter()
    for _ in range(calls):
        fn()
    torch.cuda.synchronize()
    return (time.perf_counter() - start) / calls * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("package", type=Path)
    parser.add_argument("--ops", required=True)
    parser.add_argument("--dtypes", default="float32,bfloat16")
    parser.add_argument("--cols", default="16384,65536")
    parser.add_argument("--rows", type=int, default=8)
    parser.add_argument("--calls", type=int, default=200)
    parser.add_argument("--profile", action="store_true")
    args = parser.parse_args()
    import importlib

    import torch

    torch._dynamo.config.recompile_limit = 64
    kinds, package, namespace = import_package(args.package)
    for name in args.ops.split(","):
        module = importlib.import_module(f"{package.__name__}.ops.{name}")
        call = getattr(package, name)
        backward = getattr(getattr(torch.ops, namespace), f"{name}_backward").default
        n_args = module.reference.__code__.co_argcount
        n_weights = kinds.get(name, ("rowwise", 0))[1]
        compiled = torch.compile(module.reference, dynamic=False)
        for dtype in [getattr(torch, d) for d in args.dtypes.split(",")]:
            for cols in map(int, args.cols.split(",")):
                shape = (args.rows, cols)
                xs = [torch.rand(shape, dtype=dtype, device="cuda") + 0.5 for _ in range(n_args - n_weights)]
                xs += [torch.rand(cols, dtype=dtype, device="cuda") + 0.5 for _ in range(n_weights)]
                g = torch.randn(shape, dtype=dtype, device="cuda")
                leaves = [x.clone().requires_grad_() for x in xs]

                def fwd_bwd(fn, leaves=leaves, g=g):
                    for leaf in leaves:
                        leaf.grad = None
                    fn(*leaves).backward(g)

                def forward(xs=xs):
                    with torch.no_grad():
                        call(*xs)

                times = {
                    "fwd+bwd ours": per_call(torch, lambda: fwd_bwd(call), args.calls),
                    "fwd+bwd compile": per_call(torch, lambda: fwd_bwd(compiled), args.calls),
                    "fwd ours": per_call(torch, forward, args.calls),
                    "bwd op": per_call(torch, lambda g=g, xs=xs: backward(g, *xs, [True] * n_args), args.calls),
                }
                print(f"{name:8s} {str(dtype)[6:]:9s} {cols:6d}: "
                      + ", ".join(f"{key} {us:.0f} us" for key, us in times.items()), flush=True)
                if args.profile:
                    profiler = cProfile.Profile()
                    profiler.enable()
                    for _ in range(50):
                        fwd_bwd(call)
                    torch.cuda.synchronize()
                    profiler.disable()
                    text = io.StringIO()
                    pstats.Stats(profiler, stream=text).sort_stats("tottime").print_stats(25)
                    print("\n".join(line for line in text.getvalue().splitlines() if line.strip())[:6000], flush=True)


if __name__ == "__main__":
    main()
