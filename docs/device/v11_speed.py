"""Template version 11 moved the rowwise kernels and CPU loop into the package (csrc/kernelgen/rowwise.cuh,
rowwise_cpu.h; issue 27). Do its kernels compute the same bits as version 10's, exactly as fast?

    python docs/device/v11_speed.py generate OUT --old SRC [--seed 28] [--count 20]   # dev machine
    bash docs/device/v11_speed.sh                                                      # GPU machine
    python docs/device/v11_speed.py run OUT [--cols ...] [--dtypes ...] [--json F]     # (what it runs)

`generate` writes two packages of the same CUDA rowwise ops (the rowwise sweep's expressions: its fixed
list, then seeded random ones; docs/device/rowwise_sweep.py): OUT/v10/rlean10-ops with the kernelgen of
SRC (a checkout of template version 10: `git archive 90ded24 | tar -x -C SRC`) and OUT/v11/rlean11-ops
with this checkout's, in the namespaces rlean10 and rlean11, so that one process loads both.

`run` (both packages built in place) times, for every op, dtype and row length, version 10's op against
version 11's on the same inputs: triton.testing.do_bench medians with the L2 flushed, --rounds
interleaved rounds, each side keeping its fastest. It checks that the two outputs are bitwise equal,
prints the distribution of the time ratio (v11 / v10) and every cell outside +-3%, and writes JSON.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
VERSIONS = ("v10", "v11")

_GENERATE = """
import json, sys
from kernelgen.render import generate
from kernelgen.spec import OpSpec, PackageSpec
items, name, namespace, out = json.loads(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4]
ops = [OpSpec.create(item["id"], kind="rowwise", inputs=item["inputs"], weights=item["weights"] or None,
                     expr=item["expr"], namespace=namespace) for item in items]
pkg = PackageSpec.for_new_op(ops[0], name=name)
for op in ops[1:]:
    pkg = pkg.with_op(op)
print(generate(pkg, out, force=False))
"""


def generate(out: Path, old: Path, seed: int, count: int) -> None:
    sys.path.insert(0, str(HERE))
    import rowwise_sweep

    items = [{key: item[key] for key in ("id", "inputs", "weights", "expr")} for item in rowwise_sweep.expressions(seed, count)]
    for version, source in zip(VERSIONS, (old, REPO), strict=True):
        target = out / version
        target.mkdir(parents=True, exist_ok=True)
        env = dict(os.environ, PYTHONPATH=str(source))
        done = subprocess.run([sys.executable, "-c", _GENERATE, json.dumps(items), f"rlean{version[1:]}-ops",
                               f"rlean{version[1:]}", str(target.resolve())], env=env, cwd=source, capture_output=True,
                              text=True)
        if done.returncode != 0:
            raise SystemExit(f"{version}: {done.stderr.strip().splitlines()[-1]}")
        print(f"{version}: {done.stdout.strip()} ({len(items)} ops, kernelgen from {source})")
    (out / "ops.json").write_text(json.dumps({"seed": seed, "count": count, "ops": items}, indent=1) + "\n")


def run(out: Path, args) -> None:
    import importlib

    import torch
    from triton.testing import do_bench

    items = json.loads((out / "ops.json").read_text())["ops"]
    modules = {}
    for version in VERSIONS:
        sys.path.insert(0, str(out / version / f"rlean{version[1:]}-ops"))
        modules[version] = importlib.import_module(f"rlean{version[1:]}_ops")
    print(f"{len(items)} ops x {len(args.dtypes)} dtypes x {len(args.cols)} row lengths, {args.rounds} rounds", flush=True)
    results = []
    started = time.time()
    for item in items:
        for dtype_name in args.dtypes:
            dtype = getattr(torch, dtype_name)
            for cols in args.cols:
                rows = max(1, args.size // cols)
                gen = torch.Generator("cuda").manual_seed(rows * cols)
                tensors = [torch.empty(rows, cols, dtype=dtype, device="cuda").normal_(generator=gen) for _ in item["inputs"]]
                tensors += [torch.empty(cols, dtype=dtype, device="cuda").uniform_(0.5, 1.5, generator=gen)
                            for _ in item["weights"]]
                fns = {version: getattr(modules[version], item["id"]) for version in VERSIONS}
                outs = {version: fn(*tensors) for version, fn in fns.items()}
                same = bool(torch.equal(outs["v10"], outs["v11"]) or
                            torch.equal(outs["v10"].nan_to_num(), outs["v11"].nan_to_num()))
                best = {version: float("inf") for version in VERSIONS}
                for _ in range(args.rounds):
                    for version, fn in fns.items():
                        best[version] = min(best[version], do_bench(lambda fn=fn: fn(*tensors), warmup=10, rep=60,
                                                                    return_mode="median"))
                row = {"op": item["id"], "dtype": dtype_name, "shape": f"{rows}x{cols}", "cols": cols,
                       "v10_ms": best["v10"], "v11_ms": best["v11"], "ratio": best["v11"] / best["v10"],
                       "bitwise_equal": same}
                results.append(row)
                flag = "" if same else "  OUTPUTS DIFFER"
                print(f"{item['id']:12s} {dtype_name:9s} {row['shape']:>12s}  v10 {best['v10']:.4f} ms  "
                      f"v11 {best['v11']:.4f} ms  v11/v10 {row['ratio']:.3f}{flag}", flush=True)
                if args.json:
                    Path(args.json).write_text(json.dumps({"cells": results, "seconds": time.time() - started}, indent=1) + "\n")
                del tensors, outs
    summarize(results)


def summarize(results: list[dict]) -> None:
    ratios = [row["ratio"] for row in results]
    if not ratios:
        print("no cells")
        return
    print(f"\n{len(ratios)} cells: v11/v10 time ratio min {min(ratios):.3f}, median {statistics.median(ratios):.3f}, "
          f"max {max(ratios):.3f}; outputs bitwise equal in {sum(row['bitwise_equal'] for row in results)} of {len(results)}")
    for key in ("dtype", "cols"):
        for value in sorted({row[key] for row in results}, key=str):
            part = [row["ratio"] for row in results if row[key] == value]
            print(f"  {key} {value}: median {statistics.median(part):.3f}, min {min(part):.3f}, max {max(part):.3f} ({len(part)} cells)")
    outside = [row for row in results if abs(row["ratio"] - 1) > 0.03]
    print(f"cells outside +-3%: {len(outside)}")
    for row in sorted(outside, key=lambda row: row["ratio"]):
        print(f"  {row['op']} {row['dtype']} {row['shape']}: {row['ratio']:.3f} ({row['v10_ms']:.4f} -> {row['v11_ms']:.4f} ms)")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    g = sub.add_parser("generate")
    g.add_argument("out", type=Path)
    g.add_argument("--old", type=Path, required=True, help="a kernelgen source tree of template version 10")
    g.add_argument("--seed", type=int, default=28)
    g.add_argument("--count", type=int, default=20)
    r = sub.add_parser("run")
    r.add_argument("out", type=Path)
    r.add_argument("--size", type=int, default=2**26, help="elements per input")
    r.add_argument("--cols", default="1024,4096,16384,65536")
    r.add_argument("--dtypes", default="float32,float16,bfloat16")
    r.add_argument("--rounds", type=int, default=3)
    r.add_argument("--json")
    s = sub.add_parser("summary")
    s.add_argument("json", type=Path)
    args = parser.parse_args(argv)
    if args.command == "generate":
        generate(args.out, args.old, args.seed, args.count)
    elif args.command == "run":
        args.cols = [int(c) for c in args.cols.split(",")]
        args.dtypes = [d for d in args.dtypes.split(",") if d]
        run(args.out, args)
    else:
        summarize(json.loads(args.json.read_text())["cells"])


if __name__ == "__main__":
    main()
