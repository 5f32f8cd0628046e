"""Where one forward+backward of a generated rowwise op spends its time: the GPU's kernels against the host's
CUDA calls and the wall, under torch.profiler (stop 57's question: at 2^24 elements the rowwise examples in
bfloat16 took about the time of 2^26).

    python docs/device/profile_step.py PACKAGE_DIR --op rmsnorm [--shapes 16384x1024,4096x4096,16384x4096]
                                       [--dtypes bfloat16,float32] [--steps 50]

For each shape and dtype it times the step (CUDA events over --steps back-to-back steps, after a warm-up), then
profiles --steps more and prints: the wall per step, the GPU's kernel time per step (the sum of the kernels'
durations), each kernel's share, and the CUDA runtime calls by host time per step (cudaLaunchKernel,
cudaOccupancy..., cudaFuncSetAttribute, ...). A step whose wall is far above its kernel time is bound by the
host; the runtime calls' table then says which call. The same for PyTorch's fused norm where one exists
(F.rms_norm for an op named rmsnorm, F.layer_norm for layernorm), as the yardstick. It asserts nothing.
"""

from __future__ import annotations

import argparse
import sys
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from backward_bench import import_package


def arguments(description: str, shapes: str) -> argparse.ArgumentParser:
    """The arguments this script and host_cost.py share: the package, the op, its shapes and dtypes."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("package", type=Path)
    parser.add_argument("--op", required=True)
    parser.add_argument("--shapes", default=shapes)
    parser.add_argument("--dtypes", default="bfloat16,float32")
    return parser


def pytorch_fused(op: str):
    """PyTorch's fused norm for an op named rmsnorm or layernorm (the yardstick), or None; and its weights."""
    import torch.nn.functional as F

    fused = {"rmsnorm": lambda x, w: F.rms_norm(x, (x.shape[-1],), w, eps=1e-6),
             "layernorm": lambda x, w, b: F.layer_norm(x, (x.shape[-1],), w, b, eps=1e-5)}.get(op)
    return fused, {"rmsnorm": 1, "layernorm": 2}.get(op, 0)


def cells(args, weights: int):
    """Each dtype and shape of --dtypes and --shapes: (dtype name, shape, x, the weights, a gradient), x and
    the weights on the GPU and requiring grad."""
    import torch

    for dtype_name in args.dtypes.split(","):
        dtype = getattr(torch, dtype_name)
        for shape in args.shapes.split(","):
            rows, cols = (int(n) for n in shape.split("x"))
            x = torch.randn(rows, cols, device="cuda", dtype=dtype, requires_grad=True)
            ws = [torch.randn(cols, device="cuda", dtype=dtype, requires_grad=True) for _ in range(weights)]
            yield dtype_name, shape, x, ws, torch.randn_like(x)


def main(argv: list[str] | None = None) -> None:
    parser = arguments(__doc__.splitlines()[0], "16384x1024,4096x4096,16384x4096")
    parser.add_argument("--steps", type=int, default=50)
    args = parser.parse_args(argv)

    import torch
    from torch.profiler import ProfilerActivity, profile

    _, module, _ = import_package(args.package)
    op = getattr(module, args.op)
    fused, weights = pytorch_fused(args.op)
    print(f"{args.op} on {torch.cuda.get_device_name()}; torch {torch.__version__}; {args.steps} steps a figure")

    for dtype_name, shape, x, ws, grad in cells(args, weights):
        candidates = [("ours", op)] + ([("fused", fused)] if fused is not None else [])
        for name, fn in candidates:
            def step(fn=fn, x=x, ws=ws, grad=grad):
                fn(x, *ws).backward(grad)

            for _ in range(5):
                step()
            torch.cuda.synchronize()
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            for _ in range(args.steps):
                step()
            end.record()
            torch.cuda.synchronize()
            wall = start.elapsed_time(end) * 1000 / args.steps
            with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
                for _ in range(args.steps):
                    step()
                torch.cuda.synchronize()
            kernels: dict[str, float] = defaultdict(float)
            runtime: dict[str, float] = defaultdict(float)
            for event in prof.events():
                if event.device_type == torch.autograd.DeviceType.CUDA:
                    kernels[event.name] += event.device_time / args.steps
                elif event.name.startswith("cuda") or event.name.startswith("cu"):
                    runtime[event.name] += event.cpu_time / args.steps
            gpu = sum(kernels.values())
            print(f"{dtype_name:9s} {shape:11s} {name:5s}: {wall:8.1f} us a step (events), kernels "
                  f"{gpu:8.1f} us ({100 * gpu / wall:5.1f}% of the wall)")
            for kernel, us in sorted(kernels.items(), key=lambda kv: -kv[1])[:6]:
                print(f"      kernel {us:8.1f} us  {kernel[:110]}")
            for call, us in sorted(runtime.items(), key=lambda kv: -kv[1])[:6]:
                print(f"      host   {us:8.1f} us  {call}")


if __name__ == "__main__":
    main()
