"""The host's cost of each part of one forward+backward of a generated rowwise op and of PyTorch's norm.
(Stop 58's question: profile_step.py showed the rmsnorm example's step at 16384x1024 taking 2-5x its kernels'
time, while F.rms_norm's took 1.3x).

    python docs/device/host_cost.py PACKAGE_DIR --op rmsnorm [--shapes 64x1024,16384x1024] [--dtypes bfloat16]
                                    [--calls 400] [--cprofile]

For each shape and dtype it times, on the host (time.perf_counter, no synchronization inside the loop, the GPU
kept ahead by a long kernel queued first so that no call waits on it), the calls that make a step:
the forward alone (torch.ops directly, through the public function, and with grad enabled so that autograd
records it), the backward op called directly, and the whole step `fn(x, w).backward(g)`; then the same step
under CUDA events (the wall). A part whose host time is near the step's wall is what bounds it. With
--cprofile it prints the Python functions where 200 steps of ours spend their time. It asserts nothing.
"""

from __future__ import annotations

import cProfile
import pstats
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from backward_bench import import_package
from profile_step import arguments, cells, pytorch_fused


def main(argv: list[str] | None = None) -> None:
    parser = arguments(__doc__.splitlines()[0], "64x1024,16384x1024,4096x4096")
    parser.add_argument("--calls", type=int, default=400)
    parser.add_argument("--cprofile", action="store_true")
    args = parser.parse_args(argv)

    import torch

    _, module, namespace = import_package(args.package)
    public = getattr(module, args.op)
    overload = getattr(getattr(torch.ops, namespace), args.op).default
    backward_op = getattr(getattr(torch.ops, namespace), f"{args.op}_backward").default
    fused, weights = pytorch_fused(args.op)
    print(f"{args.op} on {torch.cuda.get_device_name()}; torch {torch.__version__}; "
          f"{args.calls} calls a figure, "
          "host microseconds a call")
    hold = torch.empty(1 << 26, device="cuda")

    def host_us(fn, calls: int) -> float:
        for _ in range(10):
            fn()
        torch.cuda.synchronize()
        # Keep the GPU busy for longer than the loop takes, so that no call waits on it (the caching allocator
        # and the launch queue stay ahead): what is timed is the host.
        for _ in range(max(1, calls // 40)):
            hold.mul_(1.0)
        start = time.perf_counter()
        for _ in range(calls):
            fn()
        elapsed = time.perf_counter() - start
        torch.cuda.synchronize()
        return elapsed * 1e6 / calls

    def wall_us(fn, calls: int) -> float:
        for _ in range(10):
            fn()
        torch.cuda.synchronize()
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(calls):
            fn()
        end.record()
        torch.cuda.synchronize()
        return start.elapsed_time(end) * 1000 / calls

    for dtype_name, shape, x, ws, grad in cells(args, weights):
        xd, wd = x.detach(), [w.detach() for w in ws]
        needs = [True] * (1 + weights)
        parts = {
            "forward, torch.ops": lambda: overload(xd, *wd),
            "forward, public": lambda: public(xd, *wd),
            "forward, recorded": lambda: public(x, *ws),
            "backward op": lambda: backward_op(grad, xd, *wd, needs),
            "step": lambda: public(x, *ws).backward(grad),
        }
        if fused is not None:
            parts["fused forward"] = lambda: fused(xd, *wd)
            parts["fused step"] = lambda: fused(x, *ws).backward(grad)
        line = [f"{dtype_name:9s} {shape:11s}"]
        for name, fn in parts.items():
            with torch.no_grad() if name in ("forward, torch.ops", "forward, public", "backward op",
                                             "fused forward") else torch.enable_grad():
                line.append(f"{name} {host_us(fn, args.calls):7.1f}")
        line.append(f"| wall: step {wall_us(parts['step'], args.calls // 4):7.1f}")
        if fused is not None:
            line.append(f"fused step {wall_us(parts['fused step'], args.calls // 4):7.1f}")
        print("; ".join(line), flush=True)
        if args.cprofile and shape == args.shapes.split(",")[0]:
            profiler = cProfile.Profile()
            profiler.enable()
            for _ in range(200):
                parts["step"]()
            profiler.disable()
            torch.cuda.synchronize()
            pstats.Stats(profiler).sort_stats("tottime").print_stats(18)


if __name__ == "__main__":
    main()
