"""Two runs of rowwise_ptxas.py over the same ops, compared kernel by kernel: the backward's grad_ kernels' SASS
instructions new/old (min, median, max a op and over all) and their spill bytes, on the dev machine.

    python docs/device/rowwise_ptxas.py OLD_DIR --seed 84 --ops r00,r01 --kernelgen /tmp/old > old.txt
    python docs/device/rowwise_ptxas.py NEW_DIR --seed 84 --ops r00,r01 > new.txt
    python docs/device/ptxas_compare.py old.txt new.txt
"""

from __future__ import annotations

import argparse
import collections
import re
import statistics

_KERNEL = re.compile(r"\s+(grad_\S+)\s+(\d+) regs\s+stack\s+(\d+)\s+spill (\d+)/(\d+)\s+SASS\s+(\d+) \(([\d.]+) an element\)")


def parse(path: str) -> dict[tuple[str, str], tuple[int, int, int]]:
    """(op, kernel) -> (registers, spill-store bytes, SASS instructions) of every grad_ kernel in a report."""
    found: dict[tuple[str, str], tuple[int, int, int]] = {}
    op = ""
    with open(path) as report:
        for line in report:
            if line.startswith("=="):
                op = line.split(":")[0][3:]
                continue
            match = _KERNEL.match(line)
            if match:
                found[(op, match.group(1))] = (int(match.group(2)), int(match.group(4)), int(match.group(6)))
    return found


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("old")
    parser.add_argument("new")
    args = parser.parse_args(argv)
    old, new = parse(args.old), parse(args.new)
    per_op: dict[str, list[tuple[tuple[int, int, int], tuple[int, int, int]]]] = collections.defaultdict(list)
    for key, before in old.items():
        if key in new:
            per_op[key[0]].append((before, new[key]))
    ratios: list[float] = []
    for op, pairs in per_op.items():
        mine = [after[2] / before[2] for before, after in pairs]
        ratios += mine
        print(f"{op:6s} {len(pairs):3d} kernels  SASS new/old min {min(mine):.3f} median {statistics.median(mine):.3f} "
              f"max {max(mine):.3f}  spill bytes {sum(b[1] for b, _ in pairs)} -> {sum(a[1] for _, a in pairs)}")
    if ratios:
        print(f"all    {len(ratios):3d} kernels  SASS new/old min {min(ratios):.3f} median {statistics.median(ratios):.3f} "
              f"max {max(ratios):.3f}")


if __name__ == "__main__":
    main()
