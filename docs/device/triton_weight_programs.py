"""The Triton rowwise backward of ops with weights (issue 29): times <op>_backward alone, for each count of
programs an SM of --per-sm (set on the package's _triton_rowwise.PROGRAMS_PER_SM for every warp count: this stop's first
templates had that table; the shipped ones take the count from the compiled kernel), against
a device-to-device copy of the bytes the backward must move, in one process. Without --per-sm it times the
package as generated. It also checks the weights' gradients against the backward's CPU implementation.

    python docs/device/triton_weight_programs.py SWEEP/rsweep-ops --ops layernorm_tl,rmsnorm_tl [--per-sm 1,2,4,8]
           [--cols 1024,4096,16384] [--dtypes float32,bfloat16] [--size 67108864] [--rounds 2]
"""

from __future__ import annotations

import argparse
import importlib
import json
import sys
from pathlib import Path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("package", type=Path)
    parser.add_argument("--ops", required=True)
    parser.add_argument("--per-sm", default="")
    parser.add_argument("--cols", default="1024,4096,16384")
    parser.add_argument("--dtypes", default="float32,bfloat16")
    parser.add_argument("--size", type=int, default=2**26)
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()
    import torch
    from triton.testing import do_bench

    sys.path.insert(0, str(args.package))
    name = next(line.split(":", 1)[1].strip() for line in (args.package / ".copier-answers.yml").read_text().splitlines()
                if line.startswith("package:"))
    shared = importlib.import_module(f"{name}._triton_rowwise")
    manifest = {o["name"]: o for o in json.loads((args.package.parent / "rowwise_sweep.json").read_text())["ops"]}
    variants = [int(k) for k in args.per_sm.split(",")] if args.per_sm else [0]
    for op_name in args.ops.split(","):
        module = importlib.import_module(f"{name}.ops.{op_name}")
        backward = module._BACKWARD.split("::")
        op = getattr(getattr(torch.ops, backward[0]), backward[1]).default
        n_args = module.reference.__code__.co_argcount
        n_weights = len(manifest[op_name]["weights"])
        n_inputs = n_args - n_weights
        for dtype in [getattr(torch, d) for d in args.dtypes.split(",")]:
            for cols in map(int, args.cols.split(",")):
                shape = (args.size // cols, cols)
                gen = torch.Generator(device="cuda").manual_seed(cols)
                xs = [torch.randn(shape, dtype=dtype, device="cuda", generator=gen) for _ in range(n_inputs)]
                xs += [torch.rand(cols, dtype=dtype, device="cuda", generator=gen) + 0.5 for _ in range(n_weights)]
                g = torch.randn(shape, dtype=dtype, device="cuda", generator=gen)
                moved = (2 * n_inputs + 1) * args.size * g.element_size()
                src = torch.empty(moved // g.element_size() // 2, dtype=dtype, device="cuda")
                dst = torch.empty_like(src)
                best: dict[int, float] = {}
                copy = float("inf")
                for _ in range(args.rounds):
                    copy = min(copy, do_bench(lambda dst=dst, src=src: dst.copy_(src), warmup=10, rep=60, return_mode="median"))
                    for k in variants:
                        if k:
                            shared.PROGRAMS_PER_SM = {w: k for w in (1, 2, 4, 8, 16, 32)}
                        ms = do_bench(lambda op=op, g=g, xs=xs, n=n_args: op(g, *xs, [True] * n), warmup=10, rep=60, return_mode="median")
                        best[k] = min(best.get(k, float("inf")), ms)
                # The weights' gradients against the CPU implementation's (float64 there), on a slice of rows.
                rows = min(shape[0], 64)
                got = op(g[:rows], *[x[:rows] for x in xs[:n_inputs]], *xs[n_inputs:], [True] * n_args)
                cpu = getattr(module, f"_{op_name}_backward_cpu")
                want = cpu(g[:rows].cpu().double(), *[x[:rows].cpu().double() for x in xs[:n_inputs]],
                           *[w.cpu().double() for w in xs[n_inputs:]], [True] * n_args)
                rel = max(((a.double().cpu() - b).norm() / b.norm().clamp_min(1e-30)).item() for a, b in zip(got, want, strict=True))
                err = f" rel.err {rel:.1e}"
                cells = "; ".join(f"{'as is' if k == 0 else f'{k}/SM'} {ms * 1e3:7.1f} us ({copy / ms:4.0%})" for k, ms in best.items())
                print(f"{op_name:12s} {str(dtype)[6:]:9s} {cols:6d}: {cells}{err}", flush=True)
    # What the launches chose: programs the GPU holds and bytes spilled, per kernel, dtypes and row length.
    for key, (programs, spilled) in getattr(shared, "_HELD", {}).items():
        print(f"  {key[0].__name__} {key[2]} {key[-3:]}: {programs} programs, {spilled} B spilled")


if __name__ == "__main__":
    main()
