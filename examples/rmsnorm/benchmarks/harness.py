"""Benchmark harness shared by every op kernelgen generates (elementwise, matmul, ...).

A bench_<op>.py script declares what is particular to its op (Races: the op, its reference, its
PyTorch baseline and its twin on the other backend, the range of its inputs) and hands it, with its
dtypes and sizes, to main_<kind>() here, which parses the arguments, builds the *cases* (a dtype, a
size, the random inputs, the bytes moved or the operations done, and the functions to race), times
them honestly and reports:

  * a table on stdout: time, throughput (GB/s of bytes actually moved, or TFLOP/s), the op's
    ratio to every baseline, and the percentage of the roofline measured in the same run;
  * --json PATH: every measurement, with the device and versions, for machines;
  * --plot PATH: a PNG of throughput against size (needs matplotlib: pip install matplotlib);
  * --backward: forward+backward instead (out.backward(grad) through autograd, every argument requiring
    grad), with the op's vjp stub as one more column where the op has a generated backward; the bytes
    or operations counted are then those of both passes.

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
import os
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
    implementation alike, and a round it spoils is dropped instead of deciding the ratio (on an
    H100 the median of a 10 us matmul can come out at 82 us: the host, slowed down, is what gets timed)."""
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
    parser.add_argument("--backward", action="store_true",
                        help="time forward+backward (out.backward(grad)) instead of the forward alone")
    return parser.parse_args(argv)


def import_package(name: str) -> Any:
    """The op package, imported for a run; when it cannot be imported, most often because it is not
    built yet, the run ends with the reason on one line (the package's loader names the build
    command) rather than a traceback. The folder above benchmarks/ comes first on sys.path: a package
    built in place is found there."""
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
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


@dataclass
class Races:
    """What one op's benchmark races, as its bench_<op>.py declares it. Every case runs, in this order
    (the table's columns): the op; eager, its reference run op by op; each twin, the same formula on
    the other backend; compile, torch.compile(reference) (on CUDA, unless --no-compile); and fused,
    PyTorch's own kernel for the formula, under the name given with it."""

    op: Callable[..., Any]
    reference: Callable[..., Any]
    twins: dict[str, Callable[..., Any]] = field(default_factory=dict)
    fused: Optional[tuple[str, Callable[..., Any]]] = None  # (its column, a function of the op's arguments)
    inputs: int = 1  # elementwise and rowwise: the op's inputs (rowwise: rows x cols each) ...
    weights: int = 0  # ... then its weights (rowwise: cols elements each)
    uniform: Optional[tuple[float, float]] = None  # (low, high): inputs drawn uniformly from there; None: N(0, 1)
    bias: bool = False  # matmul: a bias of N elements follows A and B
    compile_mode: Optional[str] = None  # torch.compile's mode for the compile baseline
    stub: Optional[Callable[..., Any]] = None  # --backward: the op with the vjp stub as its backward (vjp_stub)


def vjp_stub(module: Any) -> Callable[..., Any]:
    """The op of ops/<op>.py (``module``) with ``module._backward_vjp``, the vjp of its reference, as its
    backward: what the op's training step costs without its generated backward (the column "vjp")."""
    namespace, name = module._OP.split("::")
    forward = getattr(getattr(torch.ops, namespace), name).default

    class ViaVjp(torch.autograd.Function):
        @staticmethod
        def forward(*args: Any) -> Any:
            return forward(*args)

        @staticmethod
        def setup_context(ctx: Any, inputs: Any, output: Any) -> None:
            ctx.save_for_backward(*inputs)

        @staticmethod
        def backward(ctx: Any, grad: Any) -> Any:
            return module._backward_vjp(ctx, grad)

    return ViaVjp.apply


def _impls(op: str, races: Races, args: list[torch.Tensor], use_compile: bool,
           backward: bool = False) -> dict[str, Callable[[], Any]]:
    """The functions one case races, on the same arguments, in the table's order; with ``backward``,
    each one's forward+backward (_training), and "vjp", the op with its stub (Races.stub), after eager."""
    functions: dict[str, Callable[..., Any]] = {op: races.op, "eager": races.reference}
    if backward and races.stub is not None:
        functions["vjp"] = races.stub
    functions.update(races.twins)
    if use_compile:
        torch._dynamo.reset()  # one compiled kernel per dtype and shape, none reused stale
        functions["compile"] = torch.compile(races.reference, dynamic=False, mode=races.compile_mode)
    if races.fused is not None:
        functions[races.fused[0]] = races.fused[1]
    if backward:
        return _training(functions, races, args)
    return {name: (lambda fn=fn: fn(*args)) for name, fn in functions.items()}


def _training(functions: dict[str, Callable[..., Any]], races: Races, args: list[torch.Tensor]) -> dict[str, Callable[[], Any]]:
    """--backward: each function's forward and backward, through autograd, on copies of the arguments
    that all require grad and with one fixed random output gradient; their .grad is cleared before each
    step, so every step writes its gradients afresh. The op's own autograd runs its registered backward
    (a generated one, or its stub)."""
    leaves = [arg.detach().clone().requires_grad_() for arg in args]
    with torch.no_grad():
        shape = races.reference(*args).shape
    generator = torch.Generator(args[0].device).manual_seed(7)
    grad = torch.randn(shape, dtype=args[0].dtype, device=args[0].device, generator=generator)

    def step(fn: Callable[..., Any]) -> Callable[[], Any]:
        def run_step() -> None:
            for leaf in leaves:
                leaf.grad = None
            fn(*leaves).backward(grad)
        run_step.leaves = leaves  # type: ignore[attr-defined]  # for a look at the gradients
        return run_step

    return {name: step(fn) for name, fn in functions.items()}


def _start(doc: str, argv: Optional[list[str]], package: str, op: str, backend: str, dtypes: list[str],
           extra: Optional[Callable[[argparse.ArgumentParser], Any]] = None) -> tuple[argparse.Namespace, Any, torch.device]:
    """The arguments (--help ends here, before the package is imported: it needs no build), the package
    (one line, not a traceback, when it is not built) and the device; a CUDA run the op cannot do ends
    with one line that says why."""
    args = parse_args(doc.splitlines()[0], argv, dtypes, extra=extra)
    lib = import_package(package)
    device = pick_device(args.device)
    if device.type == "cuda" and backend == "cuda" and not lib.WITH_CUDA:
        sys.exit(f"{op} was built without CUDA; rebuild with a CUDA toolkit, or pass --device cpu")
    return args, lib, device


def _titled(title: str, args: argparse.Namespace) -> str:
    return f"{title}, forward+backward" if args.backward else title


def _dtypes(args: argparse.Namespace, op: str, supported: list[str]) -> list[str]:
    """--dtypes, each one the op supports; another ends the run with one line."""
    dtypes = [d.strip() for d in args.dtypes.split(",") if d.strip()]
    unknown = [d for d in dtypes if d not in supported]
    if unknown:
        sys.exit(f"unsupported dtype {unknown[0]!r}; {op} supports {', '.join(supported)}")
    return dtypes


def _ints(text: Optional[str], cuda: list[int], cpu: list[int], device: torch.device, option: str) -> list[int]:
    """A comma-separated option of positive integers, or the script's default for the device; anything
    else ends the run with one line."""
    if not text:
        return cuda if device.type == "cuda" else cpu
    values = []
    for token in (t.strip() for t in text.split(",")):
        if not token.isdigit() or int(token) == 0:
            sys.exit(f"bad {option} value {token!r}: write positive integers separated by commas, such as 4096,65536")
        values.append(int(token))
    return values


def _random(shapes: list[tuple[int, ...]], dtype: torch.dtype, device: torch.device, races: Races,
            generator: torch.Generator) -> list[torch.Tensor]:
    """One random tensor per shape, never zeros: N(0, 1), or uniform in races.uniform (an expression
    defined on positive inputs only)."""
    tensors = []
    for shape in shapes:
        tensor = torch.empty(shape, dtype=dtype, device=device)
        if races.uniform is None:
            tensors.append(tensor.normal_(generator=generator))
        else:
            tensors.append(tensor.uniform_(*races.uniform, generator=generator))
    return tensors


def _copy_roofline(source: torch.Tensor) -> tuple[str, float, Callable[[], Any]]:
    """The practical roofline of a memory-bound op: a device-to-device copy of source, which reads and
    writes each of its elements once (2 * numel * itemsize bytes)."""
    destination = torch.empty_like(source)
    return ("copy", 2 * source.numel() * source.element_size(), lambda: destination.copy_(source))


def rowwise_cases(op: str, races: Races, device: torch.device, dtypes: list[str], sizes: list[int], cols_list: list[int],
                  use_compile: bool, backward: bool = False) -> Iterable[Case]:
    """Per dtype, size n and row length cols: the op's inputs of n // cols rows of cols, then its weights
    of cols. The bytes moved are the inputs and the weights read and the output written (--backward: also
    the gradient, the inputs and the weights read again and their gradients written); the roofline is a
    copy of the first input."""
    for dtype_name in dtypes:
        dtype = getattr(torch, dtype_name)
        for n in sizes:
            for cols in cols_list:
                rows = max(1, n // cols)
                generator = torch.Generator(device).manual_seed(n + cols)
                args = _random([(rows, cols)] * races.inputs + [(cols,)] * races.weights, dtype, device, races, generator)
                elements = rows * cols
                if backward:
                    moved = ((3 * races.inputs + 2) * elements + 3 * races.weights * cols) * args[0].element_size()
                else:
                    moved = ((races.inputs + 1) * elements + races.weights * cols) * args[0].element_size()
                yield Case(dtype=dtype_name, size=cols, shape=f"{rows}x{cols}", amount=moved, unit="GB/s",
                           impls=_impls(op, races, args, use_compile, backward), roofline=_copy_roofline(args[0]),
                           group=fmt_size(elements))


def main_rowwise(doc: str, argv: Optional[list[str]], races: Callable[[Any], Races], *, package: str, op: str,
                 backend: str, title: str, dtypes: list[str], cuda_sizes: list[int], cpu_sizes: list[int],
                 cuda_cols: list[int], cpu_cols: list[int]) -> None:
    """The whole run of a rowwise op's benchmark: races(package) declares what it races; --sizes is
    the number of elements of each input in all, --cols the row length."""
    def row_lengths(parser: argparse.ArgumentParser) -> None:
        parser.add_argument("--cols", default=None, help="comma-separated row lengths (default: the script's)")

    args, lib, device = _start(doc, argv, package, op, backend, dtypes, extra=row_lengths)
    sizes = _ints(args.sizes, cuda_sizes, cpu_sizes, device, "--sizes")
    cols = _ints(args.cols, cuda_cols, cpu_cols, device, "--cols")
    dtypes = _dtypes(args, op, dtypes)
    use_compile = device.type == "cuda" and not args.no_compile
    run(rowwise_cases(op, races(lib), device, dtypes, sizes, cols, use_compile, args.backward), op=op, device=device,
        args=args, title=_titled(title, args), xlabel="row length")
