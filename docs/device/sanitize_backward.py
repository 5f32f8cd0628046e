"""Every generated backward kernel of a built package, once per launch shape, for compute-sanitizer
(issue 29's memcheck and racecheck evidence).

    compute-sanitizer --tool memcheck  python docs/device/sanitize_backward.py PACKAGE_DIR [--ops a,b]
    compute-sanitizer --tool racecheck python docs/device/sanitize_backward.py PACKAGE_DIR [--ops a,b]

For every op with a generated backward and each of its dtypes it calls <op>_backward with every gradient
asked for, and with the inputs' only, on shapes that reach each kernel: rows of one warp (several rows
per block), of several warps, of 1024 threads, rows longer than the register kernel takes, more rows than
the GPU has row slots, a row length that defeats 16-byte vectors, and misaligned views; at rows past a Triton
op's backward register limit, also its eager training path (the long kernel loading the per-row values the
forward saved). An elementwise op gets flat sizes around its vector width. It checks nothing itself: the sanitizer reports, and the exit
status says whether any call raised.
"""

from __future__ import annotations

import argparse
import importlib
import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from backward_bench import import_package  # noqa: E402

ROWWISE_SHAPES = [(7, 33), (5, 1000), (3, 4096), (400, 4096), (2, 16384), (300, 16384), (2, 16400), (9000, 64), (600, 16400), (4, 4099), (2, 65536)]
ELEMENTWISE_SHAPES = [(1,), (255,), (4097,), (1000003,)]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("package", type=Path)
    parser.add_argument("--ops", default="")
    parser.add_argument("--dtypes", default="float32,float16,bfloat16,float64")
    parser.add_argument("--kernels", action="store_true",
                        help="list the backward kernels each op launched (torch.profiler), so that a run under the "
                             "sanitizer shows which launch paths it covered")
    args = parser.parse_args(argv)

    import torch

    kinds, package, namespace = import_package(args.package)
    module_name = package.__name__
    wanted = [name for name in args.ops.split(",") if name] or list(kinds)
    calls = 0
    profiler = None
    if args.kernels:
        profiler = torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA])
        profiler.__enter__()
    for name in wanted:
        module = importlib.import_module(f"{module_name}.ops.{name}")
        if not hasattr(module, "_backward_vjp"):
            continue
        backward = getattr(getattr(torch.ops, namespace), f"{name}_backward").default
        kind, n_weights = kinds[name]
        n_args = module.reference.__code__.co_argcount
        n_inputs = n_args - n_weights
        shapes = ROWWISE_SHAPES if kind == "rowwise" else ELEMENTWISE_SHAPES
        for dtype in [getattr(torch, d) for d in args.dtypes.split(",")]:
            for shape in shapes:
                gen = torch.Generator("cuda").manual_seed(len(shape) + shape[-1])
                xs = [torch.rand(shape, generator=gen, device="cuda", dtype=torch.float64).add_(0.5).to(dtype) for _ in range(n_inputs + 1)]
                xs += [torch.rand(shape[-1:], generator=gen, device="cuda", dtype=torch.float64).add_(0.5).to(dtype) for _ in range(n_weights)]
                g, rest = xs[0], xs[1:]
                for needs in ([True] * n_args, [True] * n_inputs + [False] * n_weights):
                    backward(g, *rest, needs)
                    calls += 1
                # misaligned: every row one element into its storage
                views = [torch.cat([t.new_zeros(1), t.flatten()])[1:].view(t.shape) for t in xs]
                backward(views[0], *views[1:], [True] * n_args)
                calls += 1
                if kind == "rowwise" and shape[-1] > getattr(module, "_MAX_BACKWARD_BLOCK", 1 << 62):
                    # the eager training path: a Triton op's forward saves its per-row values, and the long kernel
                    # loads them (KNOWN)
                    leaves = [t.detach().requires_grad_() for t in rest]
                    getattr(package, name)(*leaves).backward(g)
                    calls += 1
        torch.cuda.synchronize()
        print(f"{name}: backward calls done", flush=True)
    print(f"{calls} backward calls", flush=True)
    if profiler is not None:
        profiler.__exit__(None, None, None)
        launched: dict[str, int] = {}
        for event in profiler.events():
            match = re.search(r"\b(grad_\w*kernel)<\s*(\w+)::GradOp,\s*([\w:]+)", event.name)
            if match:
                key = f"{match.group(2)} {match.group(3).split('::')[-1]} {match.group(1)}"
                launched[key] = launched.get(key, 0) + 1
        for key in sorted(launched):
            print(f"launched: {key} x{launched[key]}", flush=True)


if __name__ == "__main__":
    main()
