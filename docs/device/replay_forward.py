"""The Triton forward's launch rule at its longest rows (rows_warps) replayed on the paths forward_paths.py measured:
for every cell (op, dtype, row length) the kernel the rule takes from the counts the GPU's Triton reported in that
run, its time, and the fastest path measured in the cell. No GPU needed.

    python docs/device/replay_forward.py RULE_FILE FPATHS.txt [FPATHS.txt ...]

RULE_FILE is a generated _triton_rowwise.py (examples/myteam-ops/myteam_ops/_triton_rowwise.py at the version to
replay); its rows_warps is asked at 16 warps, twice them as the wider choice, with the printed counts in place of
resident() and 132 SMs. The same rule with no spill tolerated (version 50's: FORWARD_SPILL_TOLERATED = 0) is
replayed beside it, and the cells where the two differ are listed. Cells without counts (float32, whose launch
asks none at 16384) are not counted. It asserts nothing.
"""

from __future__ import annotations

import importlib.util
import re
import statistics
import sys
from pathlib import Path

CELL = re.compile(r"^(\S+)\s+(\S+)\s+(\d+) \| (.*) \| counts: (.*)$")
FIGURE = re.compile(r"(\S+)\s+([\d.]+) us")
COUNT = re.compile(r"@(\d+)w: (\d+) held, (\d+) B")


def parse(path: Path):
    for line in path.read_text().splitlines():
        found = CELL.match(line)
        if found:
            op, dtype, cols, figures, counts = found.groups()
            held = {int(w): (int(h), int(s)) for w, h, s in COUNT.findall(counts)}
            yield op, dtype, int(cols), {name: float(us) for name, us in FIGURE.findall(figures)}, held


def main() -> None:
    spec = importlib.util.spec_from_file_location("rule", sys.argv[1])
    assert spec is not None and spec.loader is not None
    rule = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(rule)
    rule._sm_count = lambda device: 132
    tolerated = rule.FORWARD_SPILL_TOLERATED

    def path_taken(held: dict, tolerance: int) -> str:
        rule.resident = lambda kernel, args, options, device: held[options["num_warps"]]
        rule.FORWARD_SPILL_TOLERATED = tolerance
        warps = rule.rows_warps(object(), [], {"BLOCK": 16384, "num_warps": 16}, None, 32)
        return "long" if warps is None else f"reg@{warps}"

    ratios: dict[str, list[float]] = {"rule": [], "none": []}
    changed = []
    for path in sys.argv[2:]:
        for op, dtype, cols, times, held in parse(Path(path)):
            if 16 not in held or 32 not in held:
                continue
            timed = {name: t for name, t in times.items() if name != "auto"}
            best = min(timed, key=timed.get)
            taken = {label: path_taken(held, tolerance) for label, tolerance in (("rule", tolerated), ("none", 0))}
            for label, name in taken.items():
                ratios[label].append(timed[name] / timed[best])
            if taken["rule"] != taken["none"]:
                changed.append(timed[taken["none"]] / timed[taken["rule"]])
            print(f"{Path(path).stem:12s} {op:10s} {dtype:9s} {cols:6d} | best {best} {timed[best]:7.1f} us | "
                  + " | ".join(f"{label} {name} {timed[name]:7.1f} us ({timed[name] / timed[best]:.2f}x best)"
                               for label, name in taken.items()))
    for label, text in (("rule", f"{tolerated} bytes tolerated"), ("none", "no spill tolerated")):
        r = ratios[label]
        print(f"{text}: {len(r)} cells; time over the best path: median {statistics.median(r):.3f}, geometric mean "
              f"{statistics.geometric_mean(r):.3f}, worst {max(r):.2f}; within 5% of the best in {sum(x <= 1.05 for x in r)}")
    if changed:
        print(f"the {len(changed)} cells the tolerance changes: {sum(x > 1.0 for x in changed)} faster, speed-up over no "
              f"tolerance {min(changed):.2f}-{max(changed):.2f}x, geometric mean {statistics.geometric_mean(changed):.3f}")


if __name__ == "__main__":
    main()
