"""What docs/device/backward_paths.py and forward_paths.py share: their common arguments, the cells (op, dtype, row
length) a process takes, each op's arguments on the GPU, and a cell's paths compiled or timed; and the generated
package a script reads (package_on_path, also for triton_ptx_count.py and launch_host_cost.py)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path


def package_on_path(root: Path) -> str:
    """The name of the one Python package with an ops/ folder in the generated package ``root``, importable once this
    returns (``root`` on sys.path); exits with a message where there is not exactly one."""
    names = [p.name for p in root.iterdir() if (p / "ops").is_dir()]
    if len(names) != 1:
        sys.exit(f"{root}: expected one Python package with an ops/ folder, found {names}")
    sys.path.insert(0, str(root.resolve()))
    return names[0]


def parser(doc: str, dtypes: str, cols: str) -> argparse.ArgumentParser:
    """The arguments both tools take: the package, --ops, --dtypes, --cols, --size, --compile-only, --part and
    --graphs."""
    made = argparse.ArgumentParser(description=doc.splitlines()[0])
    made.add_argument("package", type=Path)
    made.add_argument("--ops", required=True)
    made.add_argument("--dtypes", default=dtypes)
    made.add_argument("--cols", default=cols)
    made.add_argument("--size", type=int, default=2**26)
    made.add_argument("--compile-only", action="store_true")
    made.add_argument("--part", default="0/1")
    made.add_argument("--graphs", action="store_true",
                      help="time each path replayed from a CUDA graph (the GPU's time, without the host's)")
    return made


def cells(args) -> list[tuple[str, str, int]]:
    """Every (op, dtype, row length) of the arguments; with --compile-only, every n-th from i of --part i/n."""
    every = [(op, d, int(c)) for op in args.ops.split(",") for d in args.dtypes.split(",") for c in args.cols.split(",")]
    part, parts = (int(v) for v in args.part.split("/"))
    return every[part::parts] if args.compile_only else every


def op_arguments(torch, module, n_weights: int, dtype, size: int, cols: int) -> tuple[list, int]:
    """The op's inputs (rows of ``cols``, ``size`` elements in all, uniform in [0.5, 2.5)) and weights (one row,
    uniform in [0.5, 1.5)) on the GPU, from a generator seeded with ``size``, and the number of inputs."""
    n_inputs = module.reference.__code__.co_argcount - n_weights
    shape = (size // cols, cols)
    gen = torch.Generator("cuda").manual_seed(size)
    xs = [torch.empty(shape, dtype=dtype, device="cuda").uniform_(0.5, 2.5, generator=gen) for _ in range(n_inputs)]
    xs += [torch.empty(cols, dtype=dtype, device="cuda").uniform_(0.5, 1.5, generator=gen) for _ in range(n_weights)]
    return xs, n_inputs


def compile_paths(torch, run, paths: list[str], label: str) -> None:
    """Each path called once (Triton's cache on disk filled); a build that cannot compile is reported, not fatal."""
    for path in paths:
        try:
            run(path)
        except Exception as error:
            print(f"{label} {path}: {type(error).__name__}: {str(error)[:120]}")
    torch.cuda.synchronize()
    print(f"compiled {label}", flush=True)


def time_paths(torch, do_bench, run, paths: list[str], moved: int, dtype, graphs: bool = False) -> str:
    """Each path's median time (do_bench) and its share of a copy of ``moved`` bytes, joined for one line. With
    ``graphs``, each path is captured in a CUDA graph (after three calls on a side stream, which compile its kernels
    and pool its tensors' memory) and its replay is timed: a launch through torch.ops takes the host 0.2-0.5 ms,
    more than many backwards take the GPU (docs/backward.md, "Stop 70")."""
    src = torch.empty(moved // dtype.itemsize // 2, dtype=dtype, device="cuda")
    dst = torch.empty_like(src)
    copy = do_bench(lambda: dst.copy_(src), warmup=10, rep=40, return_mode="median")
    figures = []
    for path in paths:
        try:
            call = (lambda path=path: run(path))
            if graphs:
                call = graphed_replay(torch, call)
            ms = do_bench(call, warmup=5, rep=40, return_mode="median")
            figures.append(f"{path} {1000 * ms:7.1f} us {100 * copy / ms:3.0f}%")
        except Exception as error:
            figures.append(f"{path} {type(error).__name__}")
    return " | ".join(figures)


def graphed_replay(torch, call):
    """The replay of ``call`` captured in a CUDA graph, after three calls on a side stream (its kernels compiled and
    its tensors' memory pooled). backward_bench.py --graphs times forward+backward this way too."""
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(3):
            call()
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        call()
    return graph.replay
