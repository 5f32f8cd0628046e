"""The epilogue's backward kernel of generated matmul ops, alone, against its bytes-moved roofline (issue 29).

    python docs/device/matmul_bwd_kernel_bench.py PACKAGE_DIR [--ops m00,m02] [--dtypes bfloat16]
        [--shapes 4096x4096,8192x8192] [--rounds 2] [--label base] [--json out.json]

For every op of the package with a generated backward, dtype and RowsxN shape it times <op>_backward(grad,
[acc,] [bias,] needs) with every gradient asked for (dacc and, with a bias, its column sum), and a device copy
of the bytes the pass must move (grad and acc read, dacc written), with triton.testing.do_bench (medians, L2
flushed; --rounds interleaved rounds, the fastest kept). Builds of one package with different kernel
constants run in separate processes (one namespace each); --label names the build in the output.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from backward_bench import import_package


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("package", type=Path)
    parser.add_argument("--ops", default="")
    parser.add_argument("--dtypes", default="bfloat16")
    parser.add_argument("--shapes", default="4096x4096,8192x8192")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--label", default="")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args(argv)

    import torch
    from triton.testing import do_bench

    _, _, namespace = import_package(args.package)
    manifest = json.loads((args.package.parent / f"{args.package.name}.json").read_text())
    wanted = [name for name in args.ops.split(",") if name]
    rows = []
    for entry in manifest["ops"]:
        name = entry["name"]
        if wanted and name not in wanted:
            continue
        backward = getattr(getattr(torch.ops, namespace), f"{name}_backward").default
        for dtype_name in args.dtypes.split(","):
            dtype = getattr(torch, dtype_name)
            for shape in args.shapes.split(","):
                m, n = (int(v) for v in shape.split("x"))
                gen = torch.Generator(device="cuda").manual_seed(0)
                g = torch.randn(m, n, device="cuda", generator=gen).to(dtype)
                acc = (torch.randn(m, n, device="cuda", generator=gen) * 40).to(dtype)
                bias = torch.randn(n, device="cuda", generator=gen).to(dtype)
                call = [g] + ([acc] if entry["saves_acc"] else []) + ([bias] if entry["bias"] else [])
                needs = [True, True] if entry["bias"] else [True]
                moved = g.numel() * g.element_size() * (3 if entry["saves_acc"] else 2)
                src = torch.empty(moved // 2, dtype=torch.uint8, device="cuda")
                dst = torch.empty_like(src)
                variants = {"bwd": lambda f=backward, xs=call, needs=needs: f(*xs, needs), "copy": lambda d=dst, s=src: d.copy_(s)}
                for fn in variants.values():
                    fn()
                torch.cuda.synchronize()
                best: dict[str, float] = {}
                for _ in range(args.rounds):
                    for key, fn in variants.items():
                        best[key] = min(best.get(key, float("inf")),
                                        do_bench(fn, warmup=10, rep=60, return_mode="median"))
                row = {"label": args.label, "op": name, "cost": entry.get("cost"), "dtype": dtype_name,
                       "shape": shape, "bwd_ms": best["bwd"], "copy_ms": best["copy"],
                       "copy_fraction": best["copy"] / best["bwd"]}
                rows.append(row)
                print(f"{args.label:8s} {name} cost {entry.get('cost', 0):3d} {dtype_name:8s} {shape:10s} | bwd "
                      f"{best['bwd'] * 1000:7.1f} us | copy {best['copy'] * 1000:6.1f} us | "
                      f"{100 * row['copy_fraction']:3.0f}% of copy", flush=True)
                if args.json:
                    args.json.write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
