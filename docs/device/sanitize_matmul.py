"""Every kernel of a matmul op's training path, for compute-sanitizer (issue 29's evidence): the training
forward (<op>_with_acc: CUTLASS on sm_90 where it takes the shape, the hand-written kernels elsewhere),
the epilogue's backward (its 16-byte and one-element paths, the bias's column sum) and the two products,
over ragged, aligned, batched and misaligned shapes, checked against a CPU float64 reference.

    compute-sanitizer --tool memcheck python docs/device/sanitize_matmul.py PACKAGE_DIR --ops lg,relu2 \
        [--dtypes float32,bfloat16]

Prints one line per op and dtype and exits 1 if a gradient is far from the reference (a loose check:
the generated tests hold the bounds; this one catches a kernel that reads or writes the wrong memory).
"""

from __future__ import annotations

import argparse
import importlib
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from backward_bench import import_package  # noqa: E402

#: (batch, M, K, N, offset): the offset (in elements) misaligns A, B and the output's gradient.
SHAPES = [(1, 17, 33, 65, 0), (1, 130, 72, 136, 0), (1, 1160, 264, 2056, 0), (3, 130, 72, 136, 0),
          (1, 130, 64, 136, 1), (1, 300, 40, 24, 0), (1, 4096, 8, 8, 0)]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("package", type=Path)
    parser.add_argument("--ops", required=True)
    parser.add_argument("--dtypes", default="float32,bfloat16")
    args = parser.parse_args(argv)

    import torch

    _, module, _ = import_package(args.package)
    failures = 0
    for op in args.ops.split(","):
        ops_module = importlib.import_module(f"{module.__name__}.ops.{op}")
        call, reference = getattr(ops_module, op), ops_module.reference
        bias_arg = "bias" in call.__code__.co_varnames[: call.__code__.co_argcount]
        for dtype_name in args.dtypes.split(","):
            dtype = getattr(torch, dtype_name)
            worst = 0.0
            for batch, m, k, n, offset in SHAPES:
                gen = torch.Generator().manual_seed(m * n + k)
                lead = (batch,) if batch > 1 else ()

                def make(*shape, gen=gen, offset=offset):
                    count = 1
                    for s in shape:
                        count *= s
                    flat = torch.randn(count + offset, generator=gen, dtype=torch.float64)[offset:]
                    return flat.view(shape).to(dtype)

                a, b, g = make(*lead, m, k), make(*lead, k, n), make(*lead, m, n)
                args_cpu = [a, b] + ([torch.randn(n, generator=gen, dtype=torch.float64).to(dtype)] if bias_arg else [])
                leaves = [x.cuda().requires_grad_() for x in args_cpu]
                out = call(*leaves)
                grads = torch.autograd.grad(out, leaves, g.cuda())
                exact = [x.double().requires_grad_() for x in args_cpu]
                wants = torch.autograd.grad(reference(*exact), exact, g.double())
                for got, want in zip(grads, wants):
                    scale = want.abs().max().item() + 1e-30
                    worst = max(worst, ((got.double().cpu() - want).abs().max().item()) / scale)
            torch.cuda.synchronize()
            limit = {torch.float32: 1e-3, torch.float64: 1e-9}.get(dtype, 0.1)
            ok = worst <= limit
            failures += not ok
            print(f"{op} {dtype_name}: {len(SHAPES)} shapes, largest error {worst:.2e} of the largest gradient "
                  f"({'ok' if ok else 'FAIL'})", flush=True)
    print("done", flush=True)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
