"""Two runs of the rowwise sweep side by side: the forward's time in the first and the second, cell by cell.

    python docs/device/fwd_ab.py OLD.json NEW.json

OLD.json and NEW.json are `rowwise_sweep.py run --json` files of two packages with the same expressions (one
before a template change, one after). A line a cell: both times, their ratio (new/old: below 1 is faster), both
against torch.compile and both as a share of a copy's bandwidth; then the median ratio and the count of cells
3% or more faster and slower. Cells in only one file are left out.
"""

from __future__ import annotations

import json
import statistics
import sys


def cells(path: str) -> dict[tuple[str, str, str, int], dict]:
    with open(path) as f:
        rows = json.load(f)["rows"]
    return {(r["id"], r["backend"], r["dtype"], r["cols"]): r for r in rows}


def compare(old: dict, new: dict) -> list[str]:
    lines = [f"{'op':<12} {'backend':<7} {'dtype':<9} {'cols':>6} {'old us':>8} {'new us':>8} {'new/old':>8}"
             f" {'old x':>6} {'new x':>6} {'old %':>6} {'new %':>6}"]
    ratios = []
    for key in sorted(old.keys() & new.keys()):
        a, b = old[key], new[key]
        ratio = b["us"] / a["us"]
        ratios.append(ratio)
        lines.append(f"{key[0]:<12} {key[1]:<7} {key[2]:<9} {key[3]:>6} {a['us']:>8.1f} {b['us']:>8.1f} {ratio:>8.3f}"
                     f" {a['vs_compile']:>5.2f}x {b['vs_compile']:>5.2f}x {a['pct_of_copy']:>5.0f}% {b['pct_of_copy']:>5.0f}%")
    if ratios:
        faster = sum(r <= 0.97 for r in ratios)
        slower = sum(r >= 1.03 for r in ratios)
        lines.append(f"forward new/old: median {statistics.median(ratios):.3f}, min {min(ratios):.3f}, max {max(ratios):.3f},"
                     f" {faster} of {len(ratios)} faster by 3% or more, {slower} slower")
    return lines


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit("usage: fwd_ab.py OLD.json NEW.json")
    print("\n".join(compare(cells(sys.argv[1]), cells(sys.argv[2]))))
