"""Every forward kernel of a built package's rowwise CUDA C++ ops, once per launch path, for
compute-sanitizer (issue 28's memcheck and racecheck evidence for the cluster kernel).

    compute-sanitizer --tool memcheck  python docs/device/sanitize_rows.py PACKAGE_DIR [--ops a,b] [--dtypes ...]
    compute-sanitizer --tool racecheck python docs/device/sanitize_rows.py PACKAGE_DIR [--ops a,b] [--dtypes ...]

For every rowwise op (Triton ops, whose name ends in _tl, are left out) and each dtype it calls the op on
rows that reach each kernel: one warp (several rows a block), several warps, one block of 512 threads
(16384), a cluster of two blocks (16385, no 16-byte vectors), of four (65536, with them; 65537 without),
of sixteen (262144; eight of the deep build for one 2-byte input), a row past the largest cluster (262147: the
multi-pass kernel), the longest row the deep build holds (524288: sixteen blocks), and on misaligned
views (every row one element into its storage). Each result is compared with the op's reference in
float64 on the CPU (a loose check: the sanitizer is the point; racecheck flags PyTorch's own CUDA
reductions). A call that raises is reported (RAISED, with the
shape) and the run goes on; the exit status is 1 if any call raised or missed.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from backward_bench import import_package  # noqa: E402

SHAPES = [(7, 33), (5, 1000), (3, 16384), (2, 16385), (2, 65536), (2, 65537), (2, 262144), (1, 262147), (1, 524288)]
LOOSE = {"float32": 1e-3, "float64": 1e-9, "float16": 3e-2, "bfloat16": 1e-1}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("package", type=Path)
    parser.add_argument("--ops", default="")
    parser.add_argument("--dtypes", default="float32,float16,bfloat16,float64")
    args = parser.parse_args(argv)

    import torch

    kinds, package, namespace = import_package(args.package)
    module_name = package.__name__
    wanted = [name for name in args.ops.split(",") if name] or [n for n, (k, _) in kinds.items() if k == "rowwise"]
    calls, bad, failed = 0, 0, 0
    for name in wanted:
        if name.endswith("_tl") or kinds[name][0] != "rowwise":
            continue
        module = importlib.import_module(f"{module_name}.ops.{name}")
        op = getattr(getattr(torch.ops, namespace), name).default
        n_weights = kinds[name][1]
        n_inputs = module.reference.__code__.co_argcount - n_weights
        for dtype_name in args.dtypes.split(","):
            dtype = getattr(torch, dtype_name)
            for shape in SHAPES:
                gen = torch.Generator("cuda").manual_seed(shape[-1])
                xs = [torch.rand(shape, generator=gen, device="cuda", dtype=torch.float64).add_(0.5).to(dtype) for _ in range(n_inputs)]
                xs += [torch.rand(shape[-1:], generator=gen, device="cuda", dtype=torch.float64).add_(0.5).to(dtype) for _ in range(n_weights)]
                views = [torch.cat([t.new_zeros(1), t.flatten()])[1:].view(t.shape) for t in xs]
                for case, ts in (("aligned", xs), ("misaligned", views)):
                    try:
                        out = op(*ts)
                        torch.cuda.synchronize()
                    except RuntimeError as error:  # reported, and the run goes on with the next shape
                        failed += 1
                        print(f"RAISED {name} {dtype_name} {shape} {case}: {str(error).splitlines()[0]}", flush=True)
                        continue
                    calls += 1
                    # On the CPU: racecheck flags PyTorch's own CUDA reductions, which are not ours to check.
                    want = module.reference(*(t.double().cpu() for t in ts))
                    err = ((out.double().cpu() - want).abs().max() / want.abs().max().clamp_min(1e-30)).item()
                    if not err <= LOOSE[dtype_name]:
                        bad += 1
                        print(f"MISS {name} {dtype_name} {shape} {case}: relative error {err:.3g}", flush=True)
        torch.cuda.synchronize()
        print(f"{name}: forward calls done", flush=True)
    print(f"{calls} forward calls, {bad} misses, {failed} raised", flush=True)
    sys.exit(1 if bad or failed else 0)


if __name__ == "__main__":
    main()
