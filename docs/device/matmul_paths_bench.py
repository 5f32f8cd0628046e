"""Where should a float16/bfloat16 matmul apply its epilogue: fused into the product kernel's store, or in a
pass of its own after cuBLAS's product? Times both paths of the same epilogues in one process (issue 29).

    python docs/device/matmul_paths_bench.py PKG [PKG ...] [--ops m00,n01] [--dtypes bfloat16,float16]
        [--shapes 4096x4096x4096,8192x1024x8192] [--compile bfloat16] [--rounds 2] [--json out.json]

The packages are builds of one draw (docs/device/matmul_epilogue_sweep.py with one --path each and --name
<prefix>_<path>: mm40_fused, mm40_library, mm40_rule), each labelled by its path. For each op, dtype and
MxKxN shape it times, with triton.testing.do_bench (medians, L2 flushed; --rounds interleaved rounds, each
figure the fastest):

  fwd <label>      the inference forward of each build
  train <label>    forward+backward (out.backward(g)) of each build: the training forward (the output and
                   the stored accumulator), <op>_backward, torch.matmul's two products
  compile                      torch.compile(reference) forward+backward, default mode (the dtypes of --compile)
  product                      torch.matmul alone (cuBLAS): the forward's floor

and prints one row per cell with the op's math cost (kernelgen.cost.distinct_math_cost, which kernelgen's rule,
kernelgen.cost.heavy_epilogue, compares with HEAVY_EPILOGUE_COST), and writes JSON after every cell.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from backward_bench import import_package


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("packages", type=Path, nargs="+")
    parser.add_argument("--ops", default="")
    parser.add_argument("--dtypes", default="bfloat16,float16")
    parser.add_argument("--shapes", default="4096x4096x4096,8192x1024x8192")
    parser.add_argument("--compile", default="bfloat16", help="dtypes that also time torch.compile")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args(argv)

    import importlib

    import torch
    from triton.testing import do_bench

    first = args.packages[0]
    manifest = json.loads((first.parent / f"{first.name}.json").read_text())
    builds = {package.name.rsplit("_", 1)[-1]: import_package(package)[1] for package in args.packages}
    torch.backends.cuda.matmul.allow_tf32 = False
    wanted = [name for name in args.ops.split(",") if name]

    def bench(fn) -> float:
        return do_bench(fn, warmup=10, rep=60, return_mode="median")

    rows = []
    for entry in manifest["ops"]:
        name = entry["name"]
        if wanted and name not in wanted:
            continue
        modules = {label: importlib.import_module(f"{module.__name__}.ops.{name}") for label, module in builds.items()}
        reference = next(iter(modules.values())).reference
        for dtype_name in args.dtypes.split(","):
            dtype = getattr(torch, dtype_name)
            for shape in args.shapes.split(","):
                m, k, n = (int(v) for v in shape.split("x"))
                gen = torch.Generator(device="cuda").manual_seed(0)
                a = torch.randn(m, k, device="cuda", generator=gen).to(dtype)
                b = torch.randn(k, n, device="cuda", generator=gen).to(dtype)
                bias = torch.randn(n, device="cuda", generator=gen).to(dtype)
                g = torch.randn(m, n, device="cuda", generator=gen).to(dtype)
                args_of = (a, b, bias) if entry["bias"] else (a, b)
                leaves = [x.clone().requires_grad_() for x in args_of]

                def train(fn, leaves=leaves, g=g):
                    def run():
                        for x in leaves:
                            x.grad = None
                        fn(*leaves).backward(g)
                    return run

                calls = {label: getattr(module, name) for label, module in modules.items()}
                variants = {}
                for label, call in calls.items():
                    variants[f"fwd_{label}"] = lambda f=call, xs=args_of: f(*xs)
                    variants[f"train_{label}"] = train(call)
                variants["product"] = lambda a=a, b=b: torch.matmul(a, b)
                if dtype_name in args.compile.split(","):
                    variants["compile"] = train(torch.compile(reference))
                with torch.no_grad():  # the builds agree (each within its own error model in its suite)
                    outs = [call(*args_of).float() for call in calls.values()]
                    diff = max((out - outs[0]).abs().max().item() for out in outs)
                for fn in variants.values():  # compile and warm up outside the timed rounds
                    fn()
                torch.cuda.synchronize()
                best: dict[str, float] = {}
                for _ in range(args.rounds):
                    for key, fn in variants.items():
                        best[key] = min(best.get(key, float("inf")), bench(fn))
                row = {"op": name, "epilogue": entry["epilogue"], "cost": entry["cost"], "dtype": dtype_name,
                       "shape": shape, "max_abs_diff": diff, **{f"{key}_ms": t for key, t in best.items()}}
                line = f"{name} cost {entry['cost']:3d} {dtype_name:8s} {shape:15s} | product {best['product']:.3f}"
                for label in calls:
                    line += f" | {label}: fwd {best[f'fwd_{label}']:.3f} train {best[f'train_{label}']:.3f}"
                    if "compile" in best:
                        row[f"{label}_vs_compile"] = best["compile"] / best[f"train_{label}"]
                        line += f" ({row[f'{label}_vs_compile']:.2f}x of compile)"
                if "compile" in best:
                    line += f" | compile {best['compile']:.3f}"
                if {"fused", "library"} <= set(calls):
                    row["faster_train"] = "library" if best["train_library"] < best["train_fused"] else "fused"
                    line += f" | fused/library {best['train_fused'] / best['train_library']:.2f}x"
                print(line, flush=True)
                rows.append(row)
                if args.json:
                    args.json.write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
