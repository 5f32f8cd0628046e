"""The table of an ncu_pair.py run: ncu's CSV (--csv, one row a metric) and the script's stderr (its CELL
lines), each cell's generated kernel beside compile's, counts per element (warp instructions x 32 / n).
ncu locks the clocks to base (its default --clock-control), so its times are longer than do_bench's: read
them as a ratio of the two kernels, not as the sweep's figures.

    python docs/device/ncu_pair_table.py ncu.csv ncu_stderr.log
    python docs/device/ncu_pair_table.py --metrics     # the metrics to profile, for ncu --metrics
"""

from __future__ import annotations

import csv
import io
import sys
from pathlib import Path

# metric -> (column title, per element?)
COLUMNS = {
    "gpu__time_duration.sum": ("us", False),
    "smsp__inst_executed.sum": ("inst/el", True),
    "sm__inst_executed_pipe_fma.sum": ("fma/el", True),
    "sm__inst_executed_pipe_alu.sum": ("alu/el", True),
    "sm__inst_executed_pipe_xu.sum": ("xu/el", True),
    "sm__inst_executed_pipe_lsu.sum": ("lsu/el", True),
    "smsp__issue_active.avg.pct_of_peak_sustained_active": ("issue%", False),
    "sm__warps_active.avg.pct_of_peak_sustained_active": ("warps%", False),
    "dram__throughput.avg.pct_of_peak_sustained_elapsed": ("dram%", False),
    "launch__registers_per_thread": ("regs", False),
    "launch__block_size": ("block", False),
    "launch__grid_size": ("grid", False),
}


# ncu's time units, to microseconds.
_TO_MICROSECONDS = {"ns": 1e-3, "nsecond": 1e-3, "us": 1.0, "usecond": 1.0, "ms": 1e3, "msecond": 1e3}


def kernels(text: str) -> list[tuple[str, dict[str, float]]]:
    """The profiled kernels in launch order: (name, {metric: value})."""
    start = text.find('"ID"')
    rows = csv.DictReader(io.StringIO(text[start:]))
    found: dict[int, tuple[str, dict[str, float]]] = {}
    for row in rows:
        ident = int(row["ID"])
        _, metrics = found.setdefault(ident, (row["Kernel Name"], {}))
        try:
            value = float(row["Metric Value"].replace(",", ""))
        except ValueError:
            continue
        if row["Metric Name"] == "gpu__time_duration.sum":
            value *= _TO_MICROSECONDS[row["Metric Unit"]]
        metrics[row["Metric Name"]] = value
    return [found[k] for k in sorted(found)]


def cells(stderr: str) -> list[tuple[str, str, str, int]]:
    out = []
    for line in stderr.splitlines():
        if line.startswith("CELL "):
            _, ident, dtype, cols, n = line.split()
            out.append((ident, dtype, cols, int(n)))
    return out


def table(csv_text: str, stderr: str) -> str:
    launched = kernels(csv_text)
    names = cells(stderr)
    # A cell is our kernels (kernelgen's namespace kg::) followed by compile's: a kg kernel after another
    # kernel starts the next cell.
    groups: list[list[tuple[str, dict[str, float]]]] = []
    previous_ours = False
    for name, metrics in launched:
        ours = "kg::" in name or name.startswith("void kg")
        if ours and not previous_ours:
            groups.append([])
        if groups:
            groups[-1].append((name, metrics))
        previous_ours = ours
    head = f"{'op':8} {'dtype':9} {'cols':>6} {'who':8} " + " ".join(f"{t:>8}" for t, _ in COLUMNS.values())
    lines = [head]
    for (ident, dtype, cols, n), group in zip(names, groups, strict=False):
        for name, metrics in group:
            who = "ours" if "kg" in name.split("<")[0] else "compile"
            values = []
            for metric, (_title, per) in COLUMNS.items():
                v = metrics.get(metric)
                if v is None:
                    values.append(f"{'-':>8}")
                elif per:
                    values.append(f"{v * 32 / n:8.1f}")
                else:
                    values.append(f"{v:8.1f}" if v < 1e6 else f"{v:8.0f}")
            lines.append(f"{ident:8} {dtype:9} {cols:>6} {who:8} " + " ".join(values))
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    args = sys.argv[1:] if argv is None else argv
    if args == ["--metrics"]:  # the list to give ncu --metrics: the metrics the table reads
        print(",".join(COLUMNS))
        return
    print(table(Path(args[0]).read_text(), Path(args[1]).read_text()))


if __name__ == "__main__":
    main()
