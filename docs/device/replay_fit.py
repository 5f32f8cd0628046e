"""A backward launch rule replayed on the paths backward_paths.py measured: for every cell (op, dtype, row length) the
kernel the rule takes, from the counts the GPU's Triton reported in that run, its time, and the fastest path
measured in the cell. No GPU needed.

    python docs/device/replay_fit.py RULE_FILE PATHS.txt [PATHS.txt ...]

RULE_FILE is a generated _triton_rowwise.py (examples/myteam-ops/myteam_ops/_triton_rowwise.py at the version to
replay); its backward_fit is asked with the printed counts in place of resident(). The rule of template version 48
(the rows kernel where it spills nothing, else the kernel of one program a row within 256 bytes at its warps or twice
them, else the long kernel) is replayed beside it. A cell whose counts lack one the rule asks for (the run's own
launch did not ask it), or whose chosen path was not timed, is counted apart. It asserts nothing.
"""

from __future__ import annotations

import importlib.util
import re
import statistics
import sys
from pathlib import Path

CELL = re.compile(r"^(\S+)\s+(\S+)\s+(\d+) \| (.*) \| counts: (.*)$")
FIGURE = re.compile(r"(\S+)\s+([\d.]+) us")
COUNT = re.compile(r"(rows_kernel|kernel)@(\d+)w: (\d+) held, (\d+) B")


class Missing(Exception):
    pass


def parse(path: Path):
    for line in path.read_text().splitlines():
        found = CELL.match(line)
        if not found:
            continue
        op, dtype, cols, figures, counts = found.groups()
        times = {name: float(us) for name, us in FIGURE.findall(figures)}
        held = {(kind, int(w)): (int(h), int(s)) for kind, w, h, s in COUNT.findall(counts)}
        yield op, dtype, int(cols), times, held


def choose(fit, times: dict, held: dict, cols: int) -> str:
    """The path a rule takes: fit(kind, warps, counts) answers like backward_fit."""
    if not any(name != "auto" for name in times):
        return "auto"  # rows past the op's _MAX_BACKWARD_BLOCK: the long kernel whatever the rule
    # the launch's warps for the row (the op's _num_warps): the least of those backward_paths.py forced (it forces
    # them and twice them) or, where its forced paths failed, of those the launch asked counts at
    warps = min([int(name.split("@")[1]) for name in times if "@" in name] or [w for _, w in held] or [0])
    if warps == 0:
        raise Missing("the launch's warps")
    weights = any(name.startswith("rows@") for name in times)
    if weights:
        answer = fit("rows_kernel", warps, held, cols, True)
        if answer is not None and answer[1] > 0:
            return f"rows@{answer[0]}"
    answer = fit("kernel", warps, held, cols, False)
    return "long" if answer is None else f"one@{answer[0]}"


def main() -> None:
    spec = importlib.util.spec_from_file_location("rule", sys.argv[1])
    rule = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(rule)

    def fit49(kind, warps, held, cols, prefetches):
        def resident(kernel, args, options, device):
            key = (kind, options["num_warps"])
            if key not in held:
                raise Missing(f"{kind}@{options['num_warps']}w")
            return held[key]

        rule.resident = resident
        rule._sm_count = lambda device: 132
        return rule.backward_fit(object(), [cols], {"BLOCK": 1 << (cols - 1).bit_length(), "num_warps": warps}, None,
                                 prefetches=prefetches)

    def fit48(kind, warps, held, cols, prefetches):
        def count(w):
            if (kind, w) not in held:
                raise Missing(f"{kind}@{w}w")
            return held[(kind, w)]

        h, s = count(warps)
        if prefetches:
            return (warps, h) if s == 0 else None
        if s <= 256:
            return warps, h
        wider = min(32, 2 * warps)
        return (wider, 1) if wider > warps and count(wider)[1] <= 256 else None

    ratios: dict[str, list[float]] = {"49": [], "48": []}
    apart = {"49": 0, "48": 0}
    long_only = 0
    for path in sys.argv[2:]:
        for op, dtype, cols, times, held in parse(Path(path)):
            if list(times) == ["auto"]:
                long_only += 1  # rows past the op's _MAX_BACKWARD_BLOCK: the long kernel, no choice to replay
                continue
            best_name = min(times, key=times.get)
            cells = []
            for label, fit in (("49", fit49), ("48", fit48)):
                try:
                    name = choose(fit, times, held, cols)
                except Missing as missing:
                    cells.append(f"v{label} ? (no count {missing})")
                    apart[label] += 1
                    continue
                if name not in times:
                    cells.append(f"v{label} {name} (not timed)")
                    apart[label] += 1
                    continue
                ratios[label].append(times[name] / times[best_name])
                cells.append(f"v{label} {name} {times[name]:7.1f} us ({times[name] / times[best_name]:.2f}x best)")
            print(f"{Path(path).stem:11s} {op:14s} {dtype:9s} {cols:6d} | best {best_name} {times[best_name]:7.1f} us | "
                  + " | ".join(cells))
    print(f"{long_only} cells past their op's _MAX_BACKWARD_BLOCK (the long kernel under both) not counted")
    for label in ("49", "48"):
        r = ratios[label]
        print(f"version {label}: {len(r)} cells replayed, {apart[label]} apart; time over the best path: median "
              f"{statistics.median(r):.3f}, geometric mean {statistics.geometric_mean(r):.3f}, worst {max(r):.2f}; "
              f"within 5% of the best in {sum(x <= 1.05 for x in r)}")


if __name__ == "__main__":
    main()
