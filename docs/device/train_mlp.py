"""A short training loop through a generated library's ops, against the same model in eager PyTorch
(issue 29's evidence: training-ready ops).

    python docs/device/train_mlp.py examples/myteam-ops [--norm layernorm] [--device cuda] [--dtype float32]
                                    [--steps 200] [--json out.json]
    python docs/device/train_mlp.py examples/myteam-ops --norm rmsnorm --norm-package examples/rmsnorm

The model is a two-layer MLP with a normalisation between the layers, on random data with a fixed
seed: ``h = linear_gelu(x, w1, b1)`` (the matmul with its fused bias and GELU epilogue), ``h = norm(h,
g[, beta])`` (a rowwise op of the library: layernorm; or of another built package, --norm-package: the
RMSNorm of examples/rmsnorm), ``y = h
@ w2`` (the library's matmul), and a mean squared error against random targets, trained with Adam.
The same model runs twice from the same initial weights: once through the library's ops (their
forward kernels and whatever backward each registers: a generated fused one, or the vjp of its
reference) and once through their reference() functions, eager PyTorch. The script prints both loss
curves every few steps and the largest relative difference between them, and exits 1 if it exceeds
--tolerance (the two differ only by rounding, which Adam's normalised steps do not amplify over a few
hundred steps).
"""

from __future__ import annotations

import argparse
import importlib
import json
import sys
from pathlib import Path


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("package", type=Path, help="a built library package (examples/myteam-ops)")
    parser.add_argument("--norm", default="layernorm", help="the rowwise op between the layers: (x, w) or (x, w, b)")
    parser.add_argument("--norm-package", type=Path, help="a built package that holds --norm (default: the library)")
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--dtype", default="float32")
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--batch", type=int, default=256)
    parser.add_argument("--width", type=int, default=256)
    parser.add_argument("--tolerance", type=float, default=1e-2, help="largest relative difference of the losses")
    parser.add_argument("--json")
    args = parser.parse_args(argv)

    import torch

    def load(package: Path):
        answers = (package / ".copier-answers.yml").read_text().splitlines()
        module_name = next(line.split(":", 1)[1].strip() for line in answers if line.startswith("package:"))
        sys.path.insert(0, str(package.resolve()))
        return module_name, importlib.import_module(module_name)

    module_name, library = load(args.package)
    norm_module, norm_library = load(args.norm_package) if args.norm_package else (module_name, library)
    ops = {name: importlib.import_module(f"{module_name}.ops.{name}") for name in ("linear_gelu", "matmul")}
    ops[args.norm] = importlib.import_module(f"{norm_module}.ops.{args.norm}")
    norm_inputs = ops[args.norm].reference.__code__.co_argcount
    if norm_inputs not in (2, 3):
        sys.exit(f"train_mlp: --norm {args.norm} takes {norm_inputs} tensors; it needs (x, w) or (x, w, b)")
    dtype = getattr(torch, args.dtype)
    device = torch.device(args.device)

    gen = torch.Generator().manual_seed(29)
    d = args.width

    def randn(*shape, scale=1.0):
        return (torch.randn(*shape, generator=gen, dtype=torch.float64) * scale).to(device=device, dtype=dtype)

    x = randn(args.batch, d)
    target = randn(args.batch, d)
    initial = {"w1": randn(d, d, scale=d**-0.5), "b1": randn(d, scale=0.1), "g": 1 + randn(d, scale=0.1),
               "beta": randn(d, scale=0.1), "w2": randn(d, d, scale=d**-0.5)}
    if norm_inputs == 2:
        del initial["beta"]

    def forward(p, linear_gelu, norm, matmul):
        h = linear_gelu(x, p["w1"], p["b1"])
        h = norm(h, p["g"], p["beta"]) if norm_inputs == 3 else norm(h, p["g"])
        return ((matmul(h, p["w2"]) - target).float() ** 2).mean()

    def train(linear_gelu, norm, matmul):
        params = {name: t.clone().requires_grad_() for name, t in initial.items()}
        optimizer = torch.optim.Adam(params.values(), lr=1e-3)
        losses = []
        for _ in range(args.steps):
            optimizer.zero_grad(set_to_none=True)
            loss = forward(params, linear_gelu, norm, matmul)
            loss.backward()
            optimizer.step()
            losses.append(loss.item())
        return losses

    ours = train(getattr(library, "linear_gelu"), getattr(norm_library, args.norm), getattr(library, "matmul"))
    eager = train(ops["linear_gelu"].reference, ops[args.norm].reference, ops["matmul"].reference)
    worst = max(abs(a - b) / max(abs(b), 1e-12) for a, b in zip(ours, eager))
    print(f"{args.steps} Adam steps, batch {args.batch}, width {d}, {args.dtype} on {device}; norm: {args.norm}")
    print(f"{'step':>6s} {'library ops':>14s} {'eager':>14s}")
    for step in sorted({0, *range(9, args.steps, max(1, args.steps // 10)), args.steps - 1}):
        print(f"{step + 1:6d} {ours[step]:14.6f} {eager[step]:14.6f}")
    decreased = ours[-1] < 0.5 * ours[0]
    print(f"largest relative difference of the losses: {worst:.2e} (tolerance {args.tolerance:g}); "
          f"the loss fell from {ours[0]:.4f} to {ours[-1]:.4f}")
    if args.json:
        Path(args.json).write_text(json.dumps({"args": {k: str(v) for k, v in vars(args).items()}, "library": ours,
                                               "eager": eager, "worst_relative_difference": worst}, indent=1) + "\n")
    if worst > args.tolerance or not decreased:
        print("FAILED: " + ("the curves differ beyond the tolerance" if worst > args.tolerance else "the loss did not fall by half"))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
