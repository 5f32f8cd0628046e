"""What the generated elementwise backward computes per element, counted on the dev machine (no GPU): for COUNT
expressions drawn from the elementwise sweep's grammar (docs/device/sweep.py's random_expression) with SEED, the
estimated per-element cost of the gradients (kernelgen.cost.own_cost over their distinct nodes, as the kernel
prints them after common-subexpression elimination) and their distinct quotients. Compare two versions of
kernelgen by running this under each (PYTHONPATH=<worktree>, the script given by path) and diffing the JSON.

    python docs/device/elementwise_backward_cost.py --seed 13 --json OUT.json

Not a timing: design.md lesson 34 says why it is worth counting before a device run."""

from __future__ import annotations

import argparse
import json
import random
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from sweep import random_expression

from kernelgen import cost, diff
from kernelgen.errors import ExprError
from kernelgen.expr import BinOp, parse


def measure(trees: list) -> tuple[int, int]:
    seen: set = set()
    stack = list(trees)
    total = divisions = 0
    while stack:
        node = stack.pop()
        if node in seen:
            continue
        seen.add(node)
        total += cost.own_cost(node)
        divisions += isinstance(node, BinOp) and node.op == "/"
        stack.extend(diff.children(node))
    return total, divisions


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seed", type=int, default=13)
    parser.add_argument("--count", type=int, default=80, help="draws (those that do not parse are skipped)")
    parser.add_argument("--json", type=Path, help="write {expression: [cost, divisions]} here")
    args = parser.parse_args()
    rng = random.Random(args.seed)
    found: dict[str, tuple[int, int]] = {}
    for _ in range(args.count):
        inputs = [f"x{j + 1}" for j in range(rng.randint(1, 4))]
        source = random_expression(rng, inputs, rng.randint(1, 4), rng.randint(2, 4))
        try:
            parsed = parse(source, inputs, require_all=False)
        except ExprError:
            continue
        found[source] = measure(list(diff.elementwise_vjp(parsed).values()))
    print(f"{len(found)} expressions: cost {sum(c for c, _ in found.values())}, "
          f"divisions {sum(d for _, d in found.values())}")
    if args.json:
        args.json.write_text(json.dumps(found, indent=1))


if __name__ == "__main__":
    main()
