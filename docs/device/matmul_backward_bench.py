"""Forward+backward of a generated matmul op with an epilogue (issue 29: linear + bias + GELU), on the GPU,
against eager PyTorch and torch.compile in the same process.

    python docs/device/matmul_backward_bench.py PACKAGE_DIR --op linear_gelu [--dtypes bfloat16,float16,float32]
        [--shapes 4096x4096x4096,8192x1024x8192] [--rounds 2] [--autotune bfloat16,float16] [--json out.json]

Shapes are MxKxN: A is M x K, B is K x N (8192x1024x8192 is issue 29's "8192x8192x1024": M = N = 8192,
K = 1024). For every dtype and shape it times, with triton.testing.do_bench (medians, L2 flushed; --rounds
interleaved rounds, each figure the fastest round):

  fwd+bwd ours       out = op(a, b, bias); out.backward(g): the training forward (<op>_with_acc: the
                     output and the stored accumulator in one kernel), <op>_backward (the epilogue's
                     derivative and the bias's column sum), then torch.matmul's two products
  fwd+bwd vjp        the op's forward with _backward_vjp (the vjp of reference() in op-math) as backward
  fwd+bwd eager      reference(a, b, bias).backward(g)
  fwd+bwd compile    torch.compile(reference), default mode, forward and backward
  fwd+bwd autotune   torch.compile(reference, mode="max-autotune-no-cudagraphs") (the dtypes of --autotune)
  fwd ours / train   the inference forward and the training forward alone
  bwd kernel         <op>_backward alone, and its bytes-moved roofline: grad and acc read, dacc written,
                     against a device-to-device copy of the same bytes
  3 GEMMs            three torch.matmul of the shape (cuBLAS): the products' floor for fwd+bwd

and prints one row per cell with the ratios, and writes JSON.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from backward_bench import _vjp_function, import_package  # noqa: E402


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("package", type=Path)
    parser.add_argument("--op", default="linear_gelu")
    parser.add_argument("--dtypes", default="bfloat16,float16,float32")
    parser.add_argument("--shapes", default="4096x4096x4096,8192x1024x8192")
    parser.add_argument("--autotune", default="bfloat16,float16", help="dtypes that also run max-autotune")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args(argv)

    import torch
    from triton.testing import do_bench

    _, module, namespace = import_package(args.package)
    op_module = importlib_op(module, args.op)
    call, reference = getattr(op_module, args.op), op_module.reference
    backward_op = getattr(getattr(torch.ops, namespace), f"{args.op}_backward").default
    with_acc = getattr(getattr(torch.ops, namespace), f"{args.op}_with_acc", None)
    plain = getattr(getattr(torch.ops, namespace), args.op).default
    torch.backends.cuda.matmul.allow_tf32 = False

    ViaVjp = _vjp_function(torch, plain, op_module)  # the registered op's forward, the stub's backward

    def bench(fn) -> float:
        return do_bench(fn, warmup=10, rep=80, return_mode="median")

    rows = []
    for dtype_name in args.dtypes.split(","):
        dtype = getattr(torch, dtype_name)
        for shape in args.shapes.split(","):
            m, k, n = (int(v) for v in shape.split("x"))
            gen = torch.Generator(device="cuda").manual_seed(0)
            a = (torch.randn(m, k, device="cuda", generator=gen) / k**0.25).to(dtype)
            b = (torch.randn(k, n, device="cuda", generator=gen) / k**0.25).to(dtype)
            bias = torch.randn(n, device="cuda", generator=gen).to(dtype)
            g = torch.randn(m, n, device="cuda", generator=gen).to(dtype)
            leaves = [x.clone().requires_grad_() for x in (a, b, bias)]

            def fwd_bwd(fn, leaves=leaves, g=g):
                def run():
                    for x in leaves:
                        x.grad = None
                    fn(*leaves).backward(g)
                return run

            compiled = torch.compile(reference)
            variants = {"ours": fwd_bwd(call), "vjp": fwd_bwd(ViaVjp.apply), "eager": fwd_bwd(reference),
                        "compile": fwd_bwd(compiled)}
            if dtype_name in args.autotune.split(","):
                variants["autotune"] = fwd_bwd(torch.compile(reference, mode="max-autotune-no-cudagraphs"))
            with torch.no_grad():
                acc = torch.matmul(a, b)
            variants["fwd"] = lambda: plain(a, b, bias)
            if with_acc is not None:
                variants["fwd_train"] = lambda: with_acc.default(a, b, bias)
            variants["bwd_kernel"] = lambda: backward_op(g, *([acc] if with_acc is not None else []), bias, [True, True])
            variants["gemm3"] = lambda: (torch.matmul(a, b), torch.matmul(g, b.t()), torch.matmul(a.t(), g))
            moved = g.numel() * g.element_size() * (3 if with_acc is not None else 2)
            src = torch.empty(moved // 2, dtype=torch.uint8, device="cuda")
            dst = torch.empty_like(src)
            variants["copy"] = lambda: dst.copy_(src)
            for fn in variants.values():  # compile, autotune and warm up outside the timed rounds
                fn()
            torch.cuda.synchronize()
            best: dict[str, float] = {}
            for _ in range(args.rounds):
                for name, fn in variants.items():
                    t = bench(fn)
                    best[name] = min(best.get(name, float("inf")), t)
            row = {"dtype": dtype_name, "shape": shape, **{f"{name}_ms": t for name, t in best.items()}}
            row["vs_compile"] = best["compile"] / best["ours"]
            row["vs_eager"] = best["eager"] / best["ours"]
            row["vs_vjp"] = best["vjp"] / best["ours"]
            if "autotune" in best:
                row["vs_autotune"] = best["autotune"] / best["ours"]
            row["bwd_kernel_copy_fraction"] = best["copy"] / best["bwd_kernel"]
            rows.append(row)
            print(f"{dtype_name:9s} {shape:16s} ours {best['ours']:.3f} ms | compile {best['compile']:.3f} "
                  f"({row['vs_compile']:.2f}x) | autotune {best.get('autotune', float('nan')):.3f} "
                  f"({row.get('vs_autotune', float('nan')):.2f}x) | eager {best['eager']:.3f} ({row['vs_eager']:.2f}x) | "
                  f"vjp {best['vjp']:.3f} ({row['vs_vjp']:.2f}x) | fwd {best['fwd']:.3f} train {best.get('fwd_train', float('nan')):.3f} | "
                  f"bwd kernel {best['bwd_kernel']:.3f} ({100 * row['bwd_kernel_copy_fraction']:.0f}% of copy) | "
                  f"3 GEMMs {best['gemm3']:.3f}", flush=True)
            if args.json:  # after every cell: a run cut short keeps what it measured
                args.json.write_text(json.dumps(rows, indent=1))


def importlib_op(module, op: str):
    import importlib

    return importlib.import_module(f"{module.__name__}.ops.{op}")


if __name__ == "__main__":
    main()
