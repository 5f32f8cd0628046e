"""Benchmark harness shared by every op kernelgen generates (elementwise, matmul, ...).

A bench_<op>.py script describes *cases* (a dtype, a size, the amount of work, and the functions
to race); this module times them honestly and reports:

  * a table on stdout: time, throughput (GB/s of bytes actually moved, or TFLOP/s), the op's
    ratio to every baseline, and the percentage of the roofline measured in the same run;
  * --json PATH: every measurement, with the device and versions, for machines;
  * --plot PATH: a PNG of throughput against size (needs matplotlib: pip install matplotlib).

How it times: on CUDA, triton.testing.do_bench (CUDA events around each call, the L2 cache
flushed before each, the median of many calls after a warm-up); without triton, the same method
written out below. Each case is timed in --rounds interleaved rounds (the op, its baselines, the
roofline, then again), and each implementation keeps its fastest round's median. On CPU, the median of wall-clock times after a warm-up. Inputs are random,
never zeros. Never turn these figures into a test threshold: they depend on the machine and its
load, and a test must not.
"""

from __future__ import annotations

import argparse
import importlib
import json
import math
import platform
import statistics
import sys
import time
from dataclasses import asdict, dataclass, field
from typing import Any, Callable, Iterable, Optional

import torch


@dataclass
class Case:
    """One row of the table: the op and its baselines on the same inputs."""

    dtype: str
    size: int  # x axis of the plot: elements for elementwise ops, the matrix side for matmul
    shape: str  # human-readable problem size
    amount: float  # bytes moved (unit "GB/s") or floating-point operations (unit "TFLOP/s")
    unit: str
    impls: dict[str, Callable[[], Any]]  # name -> zero-argument callable; the op comes first
    roofline: Optional[tuple[str, float, Callable[[], Any]]] = None  # (name, amount, fn)
    note: str = ""
    group: str = ""  # the plot draws one panel per dtype and group (rowwise: the total number of elements)


@dataclass
class Row:
    dtype: str
    size: int
    shape: str
    unit: str
    seconds: dict[str, float] = field(default_factory=dict)
    throughput: dict[str, float] = field(default_factory=dict)
    roofline_name: Optional[str] = None
    roofline_throughput: Optional[float] = None
    note: str = ""
    group: str = ""


def _flush_buffer(device: torch.device) -> torch.Tensor:
    return torch.empty(256 * 1024 * 1024 // 4, dtype=torch.int32, device=device)


def time_cuda(fn: Callable[[], Any], warmup_ms: float = 25, rep_ms: float = 100) -> float:
    """Median seconds per call of fn on the current CUDA device."""
    try:
        from triton.testing import do_bench
    except ImportError:
        do_bench = None
    if do_bench is not None:
        return do_bench(fn, warmup=warmup_ms, rep=rep_ms, return_mode="median") / 1e3
    # The same method without triton: warm up, then time each call with CUDA events, flushing L2
    # before it so that a small problem is not timed out of a warm cache.
    flush = _flush_buffer(torch.device("cuda"))
    fn()
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(5):
        fn()
    end.record()
    torch.cuda.synchronize()
    estimate_ms = max(start.elapsed_time(end) / 5, 1e-3)
    warmup = max(1, int(warmup_ms / estimate_ms))
    reps = max(5, min(1000, int(rep_ms / estimate_ms)))
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(reps):
        flush.zero_()
        start.record()
        fn()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end))
    return statistics.median(times) / 1e3


def time_cpu(fn: Callable[[], Any], min_seconds: float = 0.2) -> float:
    """Median seconds per call of fn, on the host clock."""
    fn()
    times: list[float] = []
    deadline = time.perf_counter() + min_seconds
    while len(times) < 5 or (time.perf_counter() < deadline and len(times) < 1000):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def _scale(unit: str) -> float:
    return 1e9 if unit == "GB/s" else 1e12


def measure(case: Case, device: torch.device, rounds: int = 3) -> Row:
    """Times the op, its baselines and the roofline in `rounds` interleaved rounds (op, baselines,
    roofline, then again), and keeps each one's fastest round. A slow spell of the machine (a
    background compile, a clock change, another process on the host) then lands on every
    implementation alike, and a round it spoiled is dropped instead of deciding the ratio (on an
    H100, the median of a 10 us matmul once came out at 82 us: the host, slowed down, was timed)."""
    timer = time_cuda if device.type == "cuda" else time_cpu
    row = Row(case.dtype, case.size, case.shape, case.unit, note=case.note, group=case.group)
    timed = dict(case.impls)
    if case.roofline is not None:
        timed[" roofline"] = case.roofline[2]  # a key no impl can have
    best = {name: math.inf for name in timed}
    for _ in range(max(1, rounds)):
        for name, fn in timed.items():
            best[name] = min(best[name], timer(fn))
    for name in case.impls:
        row.seconds[name] = best[name]
        row.throughput[name] = case.amount / best[name] / _scale(case.unit)
    if case.roofline is not None:
        row.roofline_name = case.roofline[0]
        row.roofline_throughput = case.roofline[1] / best[" roofline"] / _scale(case.unit)
    return row


def fmt_size(n: int) -> str:
    if n > 0 and n & (n - 1) == 0 and n >= 1024:
        return f"2^{int(math.log2(n))}"
    return str(n)


def format_table(rows: list[Row], op: str) -> str:
    if not rows:
        return "(no measurements)"
    impls = list(rows[0].throughput)
    baselines = impls[1:]
    unit = rows[0].unit
    head = ["dtype", "size", f"{op} us", f"{op} {unit}"]
    head += [f"{b} {unit}" for b in baselines]
    head += [f"vs {b}" for b in baselines]
    roof = rows[0].roofline_name
    if roof:
        head += [f"{roof} {unit}", f"% of {roof}"]
    table = [head]
    for row in rows:
        cells = [row.dtype, row.shape, f"{row.seconds[op] * 1e6:.1f}", f"{row.throughput[op]:.1f}"]
        cells += [f"{row.throughput[b]:.1f}" for b in baselines]
        cells += [f"{row.throughput[op] / row.throughput[b]:.2f}x" for b in baselines]
        if roof and row.roofline_throughput:
            cells += [f"{row.roofline_throughput:.1f}", f"{100 * row.throughput[op] / row.roofline_throughput:.0f}%"]
        table.append(cells)
    widths = [max(len(r[i]) for r in table) for i in range(len(head))]
    lines = ["  ".join(cell.rjust(w) for cell, w in zip(r, widths)) for r in table]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)


def environment(device: torch.device) -> dict[str, Any]:
    info: dict[str, Any] = {
        "torch": torch.__version__,
        "cuda": torch.version.cuda,
        "python": platform.python_version(),
        "device": str(device),
        "date": time.strftime("%Y-%m-%d %H:%M:%S"),
    }
    if device.type == "cuda":
        props = torch.cuda.get_device_properties(device)
        info["gpu"] = props.name
        info["sms"] = props.multi_processor_count
    else:
        info["cpu"] = platform.processor() or platform.machine()
        info["threads"] = torch.get_num_threads()
    return info


def plot(rows: list[Row], op: str, path: str, title: str, xlabel: str = "size") -> None:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        sys.exit("--plot needs matplotlib: pip install matplotlib   (or: pip install -e '.[bench]')")
    panels = list(dict.fromkeys(f"{row.dtype} {row.group}".strip() for row in rows))
    fig, axes = plt.subplots(1, len(panels), figsize=(5 * len(panels), 4.2), squeeze=False)
    for ax, dtype in zip(axes[0], panels):
        mine = [row for row in rows if f"{row.dtype} {row.group}".strip() == dtype]
        sizes = [row.size for row in mine]
        for name in mine[0].throughput:
            style = dict(linewidth=2.5, marker="o") if name == op else dict(linewidth=1.2, marker=".")
            ax.plot(sizes, [row.throughput[name] for row in mine], label=name, **style)
        if mine[0].roofline_name:
            ax.plot(sizes, [row.roofline_throughput for row in mine], "k--", label=f"{mine[0].roofline_name} (roofline)")
        ax.set_xscale("log", base=2)
        ax.set_xlabel(xlabel)
        ax.set_ylabel(mine[0].unit)
        ax.set_title(dtype)
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=8)
    fig.suptitle(title)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    print(f"wrote {path}")


def parse_args(description: str, argv: Optional[list[str]] = None, dtypes: Iterable[str] = (),
               extra: Optional[Callable[[argparse.ArgumentParser], Any]] = None) -> argparse.Namespace:
    """The options every benchmark takes, and those ``extra`` adds. A script parses them before it
    imports its package, so that --help works before the package is built."""
    parser = argparse.ArgumentParser(description=description)
    if extra is not None:
        extra(parser)
    parser.add_argument("--device", default=None, help="cuda or cpu (default: cuda if available)")
    parser.add_argument("--dtypes", default=",".join(dtypes), help="comma-separated dtypes to run")
    parser.add_argument("--sizes", default=None, help="comma-separated sizes (default: the script's)")
    parser.add_argument("--json", metavar="PATH", help="write every measurement as JSON")
    parser.add_argument("--plot", metavar="PATH", help="write a PNG of throughput against size")
    parser.add_argument("--no-compile", action="store_true", help="skip the torch.compile baseline")
    parser.add_argument("--rounds", type=int, default=3,
                        help="interleaved rounds per case; each implementation keeps its fastest (default 3)")
    return parser.parse_args(argv)


def import_package(name: str) -> Any:
    """The op package, imported for a run; when it cannot be imported, most often because it is not
    built yet, the run ends with the reason on one line (the package's loader names the build
    command) rather than a traceback."""
    try:
        return importlib.import_module(name)
    except ImportError as err:
        sys.exit(f"error: cannot run the benchmark: {err}")


def pick_device(requested: Optional[str]) -> torch.device:
    if requested:
        return torch.device(requested)
    return torch.device("cuda" if torch.cuda.is_available() else "cpu")


def run(cases: Iterable[Case], *, op: str, device: torch.device, args: argparse.Namespace, title: str,
        xlabel: str = "size") -> list[Row]:
    env = environment(device)
    where = env.get("gpu") if device.type == "cuda" else f"CPU ({env['threads']} threads)"
    print(f"{title} on {where}; torch {env['torch']}")
    if device.type != "cuda":
        print("NOTE: these are CPU figures (no CUDA device), of the CPU implementation against the reference.")
    rows = []
    for case in cases:
        row = measure(case, device, getattr(args, "rounds", 3))
        rows.append(row)
        print(f"  measured {row.dtype} {row.shape}", file=sys.stderr, flush=True)
    print(format_table(rows, op))
    if args.json:
        with open(args.json, "w") as fh:
            json.dump({"op": op, "environment": env, "rows": [asdict(r) for r in rows]}, fh, indent=2)
        print(f"wrote {args.json}")
    if args.plot:
        plot(rows, op, args.plot, f"{title} on {where}", xlabel)
    return rows
