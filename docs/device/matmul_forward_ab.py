"""The inference forward's cost of the accumulator store (issue 29): one epilogue generated twice in one
package, as an op whose backward reads acc (its CUTLASS epilogue has the aux-store node; inference passes a
null pointer) and as a --backward vjp op (no node), timed side by side with cuBLAS's product alone and the
training forward (which stores acc).

    python docs/device/matmul_forward_ab.py PACKAGE_DIR WITH_NODE_OP,WITHOUT_NODE_OP [--shapes 4096x4096x4096,...]
        [--dtypes bfloat16,float16] [--rounds 3]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from backward_bench import import_package  # noqa: E402


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("package", type=Path)
    parser.add_argument("ops", help="the op with the node and its --backward vjp twin, comma-separated")
    parser.add_argument("--shapes", default="4096x4096x4096,8192x1024x8192")
    parser.add_argument("--dtypes", default="bfloat16,float16")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args(argv)

    import torch
    from triton.testing import do_bench

    _, _, namespace = import_package(args.package)
    library = getattr(torch.ops, namespace)
    with_node, without_node = args.ops.split(",")
    for dtype_name in args.dtypes.split(","):
        dtype = getattr(torch, dtype_name)
        for shape in args.shapes.split(","):
            m, k, n = (int(v) for v in shape.split("x"))
            gen = torch.Generator(device="cuda").manual_seed(0)
            a = torch.randn(m, k, device="cuda", generator=gen).to(dtype)
            b = torch.randn(k, n, device="cuda", generator=gen).to(dtype)
            bias = torch.randn(n, device="cuda", generator=gen).to(dtype)
            variants = {
                "node (inference)": lambda: getattr(library, with_node).default(a, b, bias),
                "no node": lambda: getattr(library, without_node).default(a, b, bias),
                "training (stores acc)": lambda: getattr(library, f"{with_node}_with_acc").default(a, b, bias),
                "cuBLAS product": lambda: torch.matmul(a, b),
            }
            best: dict[str, float] = {}
            for _ in range(args.rounds):
                for name, fn in variants.items():
                    best[name] = min(best.get(name, float("inf")), do_bench(fn, warmup=10, rep=100, return_mode="median"))
            base = best["no node"]
            print(f"{dtype_name:9s} {shape:16s} " + " | ".join(f"{name} {t:.4f} ms ({base / t:.3f}x)" for name, t in best.items()),
                  flush=True)


if __name__ == "__main__":
    main()
