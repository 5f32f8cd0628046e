"""What the generated rowwise backward computes per element, counted on the dev machine (no GPU): for each op of
one or more rowwise sweep manifests, the backward's reductions, its per-element divisions and an estimate of its
per-element instructions. Compare two versions of kernelgen by running this under each (PYTHONPATH=<worktree>,
with the script given by path so that the worktree's kernelgen is imported) and diffing the JSON.

    python docs/device/backward_cost.py .device/s50/rowwise_sweep.json [...] [--json OUT]

The cost is kernelgen.cost.own_cost summed over the distinct row-varying nodes of the gradients (their plan
forms, as the kernels print them) and of the reductions' arguments: what one element costs once the per-row
values are known (the compiler computes those once a row). Divisions count the distinct quotients by a row-varying
denominator. Neither is a timing: design.md lesson 34 says why they are worth counting before a device run."""

from __future__ import annotations

import argparse
import json
import statistics
from pathlib import Path

from kernelgen import cost, diff
from kernelgen.expr import BinOp, parse


def measure(op: dict) -> dict[str, int]:
    backward = diff.rowwise_vjp(parse(op["expr"], op["inputs"], weights=op["weights"], rowwise=True))
    trees = [*backward.input_plan.values(), *backward.weight_plan.values(), *(stage.arg for stage in backward.stages)]
    seen: set = set()
    stack = list(trees)
    total = divisions = 0
    while stack:
        node = stack.pop()
        if node in seen or not diff.row_varying(node):
            continue
        seen.add(node)
        total += cost.own_cost(node)
        divisions += isinstance(node, BinOp) and node.op == "/"
        stack.extend(diff.children(node))
    return {"reductions": len(backward.stages), "divisions": divisions, "cost": total}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("manifests", nargs="+", type=Path)
    parser.add_argument("--json", type=Path, help="write {manifest:op: counts} here")
    args = parser.parse_args()
    found: dict[str, dict[str, int]] = {}
    for manifest in args.manifests:
        for op in json.loads(manifest.read_text())["ops"]:
            if op.get("backend", "cuda") == "cuda":
                found[f"{manifest.parent.name}:{op['name']}"] = measure(op)
    print(f"{'op':24s} {'reductions':>10s} {'divisions':>9s} {'cost':>6s}")
    for name, counts in found.items():
        print(f"{name:24s} {counts['reductions']:10d} {counts['divisions']:9d} {counts['cost']:6d}")
    totals = {key: sum(counts[key] for counts in found.values()) for key in ("reductions", "divisions", "cost")}
    print(f"{len(found)} ops: {totals['reductions']} reductions, {totals['divisions']} divisions, cost {totals['cost']}"
          f" (median {statistics.median(counts['cost'] for counts in found.values())})")
    if args.json:
        args.json.write_text(json.dumps(found, indent=1) + "\n")


if __name__ == "__main__":
    main()
