"""The host's time a call of a generated Triton rowwise backward's launch rules, on a machine without a GPU.

    python docs/device/launch_host_cost.py PACKAGE_DIR [--ops r03_tl] [--cols 4096] [--rows 16384] [--spills 0,100]

Every backward of an op asks the package's rules (_triton_rowwise: backward_launch for its register kernels,
weight_tile for the weights' kernel) how to launch, in Python, on the host, before the GPU sees a kernel; where the
GPU's work a step is a few hundred microseconds, the host's is what an eager step waits on (docs/backward.md, stop
70). This times those calls in a steady state: the compiled kernels' counts stand in for a GPU's (a build of 128
registers, --spills bytes spilled a thread, 1 KB of shared memory, on 132 SMs of 2048 threads, 65536 registers and
228 KB each), every cache already filled by a first call, then N calls timed. The arguments are the ones the
template's launch passes (a dtype a tensor, bfloat16 with the per-row values and partial sums in float32, 1 a
flag, 16 rows standing in for the loop bound, the row length). It runs on any version of the template, so two
packages generated from one seed compare a change of the launch's host work.

With --whole, each op's whole backward launch (_<op>_backward_launch: the checks, the allocations, the rules, the
grid arithmetic) is timed too, on CPU tensors of --rows x --cols in bfloat16, every gradient asked for, with the
kernels recorded instead of launched: the host's time a step that the package's Python adds to Triton's own
launches. It asserts nothing.
"""

from __future__ import annotations

import argparse
import importlib
import sys
import time
import types
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from paths_common import package_on_path


class _Compiled:
    """A compiled kernel's counts, as Triton reports them after _init_handles."""

    def __init__(self, spills: int):
        self.n_regs, self.n_spills = 128, spills
        self.metadata = types.SimpleNamespace(shared=1024)

    def _init_handles(self):
        pass


def kernel_args(torch, kernel, cols: int) -> list:
    """The arguments resident() is asked about for ``kernel``, in its order, as the template's launch builds them."""
    out = []
    for name in kernel.arg_names:
        if name in ("BLOCK", "ACC", "STAGES", "BLOCK_R", "BLOCK_C", "rows_per_split"):
            continue
        if name.endswith("_ptr"):
            partial = name == "_stats_ptr" or (name.startswith("_p") and name[2:-4].isdigit())
            out.append(torch.float32 if partial else torch.bfloat16)
        elif name == "rows":
            out.append(16)
        elif name == "cols":
            out.append(cols)
        else:
            out.append(1)
    return out


def per_call(call, n: int) -> float:
    call()  # the caches filled
    start = time.perf_counter()
    for _ in range(n):
        call()
    return (time.perf_counter() - start) / n * 1e6


class _Recorded:
    """wrap() of a kernel whose launches are not made: kernel[grid](*args, **options) does nothing."""

    def __getitem__(self, grid):
        return lambda *args, **options: None


def whole_launch(torch, shared, module, name: str, args) -> float:
    """Microseconds a call of ``module``'s _<name>_backward_launch on CPU tensors, kernels not launched."""
    import contextlib
    import inspect

    launch = getattr(module, f"_{name}_backward_launch")
    params = [p for p in inspect.signature(launch).parameters if p not in ("_grad", "_needs", "wrap")]
    weights = [p for p in params if p.startswith("w")]
    torch.cuda.device = lambda device: contextlib.nullcontext()
    module._column_sum = lambda partial, dtype, wrap: torch.empty(partial.shape[-1], dtype=dtype)
    grad = torch.empty(args.rows, args.cols, dtype=torch.bfloat16)
    tensors = [torch.empty(args.cols if p in weights else (args.rows, args.cols), dtype=torch.bfloat16) for p in params]
    needs = [True] * len(params)
    return per_call(lambda: launch(grad, *tensors, needs, lambda kernel: _Recorded()), max(1, args.calls // 10))


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("package", type=Path)
    parser.add_argument("--ops", default="", help="comma-separated op names (default: every op with a backward)")
    parser.add_argument("--cols", type=int, default=4096)
    parser.add_argument("--rows", type=int, default=16384)
    parser.add_argument("--spills", default="0,100", help="bytes a thread every build spills, a run each")
    parser.add_argument("--calls", type=int, default=20000)
    parser.add_argument("--whole", action="store_true", help="also time each op's whole backward launch")
    args = parser.parse_args(argv)
    import torch

    package = package_on_path(args.package)
    shared = importlib.import_module(f"{package}._triton_rowwise")
    props = types.SimpleNamespace(max_threads_per_multi_processor=2048, regs_per_multiprocessor=65536,
                                  shared_memory_per_multiprocessor=233472, multi_processor_count=132)
    torch.cuda.get_device_properties = lambda index: props
    torch.cuda.current_device = lambda: 0
    device = torch.device("cuda", 0)
    ops_dir = args.package / package / "ops"
    names = [n for n in args.ops.split(",") if n] or sorted(p.stem for p in ops_dir.glob("*.py") if p.stem != "__init__")
    version = next((line.split(":", 1)[1].strip() for line in (args.package / ".copier-answers.yml").read_text().splitlines()
                    if line.startswith("_template_version")), "?")
    print(f"template version {version}; rows of {args.cols}, {args.rows} rows; microseconds a call, {args.calls} calls")
    for spills in map(int, args.spills.split(",")):
        for name in names:
            module = importlib.import_module(f"{package}.ops.{name}")
            kernels = {k: getattr(module, f"_{name}_{k}", None) for k in ("backward_rows_kernel", "backward_kernel",
                                                                         "weight_grad_kernel")}
            if kernels["backward_kernel"] is None:
                continue
            for kernel in kernels.values():
                if kernel is not None:
                    kernel.warmup = lambda *a, spills=spills, **o: _Compiled(spills)
            for cache in ("_HELD", "_PIPELINED", "_ANSWERS"):
                getattr(shared, cache, {}).clear()
            block = 1 << (args.cols - 1).bit_length()
            options = {"BLOCK": block, "ACC": None, "num_warps": module._num_warps(block)}
            figures = []
            for kind in ("backward_rows_kernel", "backward_kernel"):
                kernel = kernels[kind]
                if kernel is None:
                    continue
                kargs = kernel_args(torch, kernel, args.cols)
                plan = shared.backward_launch(kernel, kargs, dict(options), device, args.rows,
                                              rows_kernel=kind == "backward_rows_kernel")
                cost = per_call(lambda kernel=kernel, kargs=kargs, kind=kind, options=options: shared.backward_launch(
                    kernel, kargs, dict(options), device, args.rows, rows_kernel=kind == "backward_rows_kernel"), args.calls)
                figures.append(f"{kind.replace('backward_', '')} {cost:5.1f} (answer {plan})")
            if kernels["weight_grad_kernel"] is not None:
                dtypes = kernel_args(torch, kernels["weight_grad_kernel"], args.cols)[:-2]  # less rows and cols
                cost = per_call(lambda kernel=kernels["weight_grad_kernel"], dtypes=dtypes: shared.weight_tile(
                    kernel, dtypes, args.rows, args.cols, None, device), args.calls)
                figures.append(f"weight_tile {cost:5.1f}")
            if args.whole:
                figures.append(f"whole launch {whole_launch(torch, shared, module, name, args):6.1f}")
            print(f"{name:10s} spills {spills:3d} B: " + "; ".join(figures), flush=True)


if __name__ == "__main__":
    main()
