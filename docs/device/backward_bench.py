"""Forward+backward of generated elementwise and rowwise ops on the GPU (issue 29): the generated backward
op against the vjp of the reference, eager PyTorch and torch.compile, in the same process.

    python docs/device/backward_bench.py PACKAGE_DIR [--ops muladd,silu_mul,gelu] [--dtypes float32,bfloat16]
                                         [--size 67108864] [--cols 1024,4096,16384] [--rounds 3] [--json out.json]

PACKAGE_DIR is a built package (examples/myteam-ops after `pip install -e`, or a sweep package). For every
op with a generated backward (its module has _backward_vjp), dtype and size (a rowwise op: each row length
of --cols, rows of --size / cols elements, weights of one row) it times, with triton.testing.do_bench
(medians, L2 flushed, --rounds interleaved rounds, each keeping its fastest):

  fwd+bwd ours      out = op(*x); out.backward(g)  (the generated <op>_backward)
  fwd+bwd vjp       the op's forward with _backward_vjp (the vjp of reference()) as its backward,
                    through a torch.autograd.Function
  fwd+bwd eager     reference(*x).backward(g)
  fwd+bwd compile   torch.compile(reference) forward and backward
  bwd alone         <op>_backward(g, *x, [True] * n) and its bytes-moved roofline: grad and the inputs
                    read, the inputs' gradients written (a rowwise op's weights and their gradients are
                    one row each: not counted), against a device-to-device copy of the same bytes

and prints one row per cell with the ratios (ours vs compile, ours vs vjp) and writes JSON.
"""

from __future__ import annotations

import argparse
import importlib
import json
import re
import sys
from pathlib import Path


def op_kinds(answers: str) -> dict[str, tuple[str, int]]:
    """Each op's kind and number of weights, read from the package's .copier-answers.yml (its `ops:` list,
    as kernelgen writes it: `- name: ...` then the op's fields indented by two)."""
    kinds: dict[str, tuple[str, int]] = {}
    for block in re.split(r"^- name: ", answers.split("\nops:\n", 1)[-1], flags=re.MULTILINE)[1:]:
        name = block.split("\n", 1)[0].strip()
        kind = re.search(r"^  kind: (\w+)", block, re.MULTILINE)
        weights = re.search(r"^  weights:\n((?:  - .*\n)+)", block, re.MULTILINE)
        kinds[name] = (kind.group(1) if kind else "elementwise", len(weights.group(1).splitlines()) if weights else 0)
    return kinds


def import_package(root: Path):
    """A built package, imported (its root put on sys.path): its ops (:func:`op_kinds`), its module and
    its torch.ops namespace, read from its .copier-answers.yml."""
    text = (root / ".copier-answers.yml").read_text()
    lines = text.splitlines()
    module_name = next(line.split(":", 1)[1].strip() for line in lines if line.startswith("package:"))
    namespace = next(line.split(":", 1)[1].strip() for line in lines if line.startswith("namespace:"))
    sys.path.insert(0, str(root.resolve()))
    return op_kinds(text), importlib.import_module(module_name), namespace


def _vjp_function(torch, overload, module):
    """An autograd.Function of the op's forward with _backward_vjp (the stub) as its backward."""

    class ViaVjp(torch.autograd.Function):
        @staticmethod
        def forward(*xs):
            return overload(*xs)

        @staticmethod
        def setup_context(ctx, inputs, output):
            module._setup_context(ctx, inputs, output)

        @staticmethod
        def backward(ctx, grad):
            return module._backward_vjp(ctx, grad)

    return ViaVjp


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("package", type=Path)
    parser.add_argument("--ops", default="", help="comma-separated op names (default: every op with a generated backward)")
    parser.add_argument("--dtypes", default="float32,float16,bfloat16")
    parser.add_argument("--size", type=int, default=2**26, help="elements per input")
    parser.add_argument("--cols", default="1024,4096,16384", help="row lengths of the rowwise ops")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--json")
    args = parser.parse_args(argv)

    import torch
    from triton.testing import do_bench

    # One compiled reference per op serves every dtype and shape: each is a recompilation, and past
    # Dynamo's default limit (8) the reference would silently run eager.
    torch._dynamo.config.recompile_limit = 64

    kinds, package, namespace = import_package(args.package)
    module_name = package.__name__
    wanted = [name for name in args.ops.split(",") if name]
    names = wanted or sorted(p.stem for p in (Path(package.__file__).parent / "ops").glob("*.py") if p.stem != "__init__")
    ops = []
    for name in names:
        module = importlib.import_module(f"{module_name}.ops.{name}")
        if hasattr(module, "_backward_vjp"):
            ops.append((name, module))
    print(f"{len(ops)} ops with a generated backward: {', '.join(name for name, _ in ops)}", flush=True)

    def bench(fn) -> float:
        return do_bench(fn, warmup=10, rep=60, return_mode="median")

    results = []
    for name, module in ops:
        call = getattr(package, name)
        overload = getattr(getattr(torch.ops, namespace), name).default
        backward = getattr(getattr(torch.ops, namespace), f"{name}_backward").default
        n_args = module.reference.__code__.co_argcount
        kind, n_weights = kinds.get(name, ("elementwise", 0))
        n_inputs = n_args - n_weights
        compiled = torch.compile(module.reference, dynamic=False)

        via_vjp = _vjp_function(torch, overload, module)
        shapes = [(args.size,)] if kind != "rowwise" else [(args.size // c, c) for c in map(int, args.cols.split(","))]

        for dtype_name, shape in [(d, s) for d in args.dtypes.split(",") for s in shapes]:
            dtype = getattr(torch, dtype_name)
            gen = torch.Generator("cuda").manual_seed(args.size)
            xs = [torch.empty(shape, dtype=dtype, device="cuda").uniform_(0.5, 2.5, generator=gen) for _ in range(n_inputs)]
            xs += [torch.empty(shape[-1], dtype=dtype, device="cuda").uniform_(0.5, 1.5, generator=gen) for _ in range(n_weights)]
            g = torch.empty(shape, dtype=dtype, device="cuda").normal_(generator=gen)
            leaves = [x.clone().requires_grad_() for x in xs]

            def fwd_bwd(fn, leaves=leaves, g=g):
                for leaf in leaves:
                    leaf.grad = None
                fn(*leaves).backward(g)

            compiled(*leaves).backward(g)  # compile forward and backward before timing
            best = {key: float("inf") for key in ("ours", "vjp", "eager", "compile", "bwd")}
            for _ in range(args.rounds):
                best["ours"] = min(best["ours"], bench(lambda: fwd_bwd(call)))
                best["vjp"] = min(best["vjp"], bench(lambda: fwd_bwd(via_vjp.apply)))
                best["eager"] = min(best["eager"], bench(lambda: fwd_bwd(module.reference)))
                best["compile"] = min(best["compile"], bench(lambda: fwd_bwd(compiled)))
                best["bwd"] = min(best["bwd"], bench(lambda: backward(g, *xs, [True] * n_args)))
            moved = (2 * n_inputs + 1) * args.size * xs[0].element_size()
            src = torch.empty(moved // xs[0].element_size() // 2, dtype=dtype, device="cuda")
            dst = torch.empty_like(src)
            copy_ms = bench(lambda: dst.copy_(src))
            row = {"op": name, "kind": kind, "dtype": dtype_name, "size": args.size, "cols": shape[-1],
                   **{f"{k}_ms": v for k, v in best.items()},
                   "vs_compile": best["compile"] / best["ours"], "vs_vjp": best["vjp"] / best["ours"],
                   "vs_eager": best["eager"] / best["ours"], "bwd_roofline": copy_ms / best["bwd"]}
            results.append(row)
            print(f"{name:12s} {dtype_name:9s} {shape[-1]:>9d} fwd+bwd ours {best['ours']:.3f} ms, vjp {best['vjp']:.3f}, eager "
                  f"{best['eager']:.3f}, compile {best['compile']:.3f}: {row['vs_compile']:.2f}x compile, "
                  f"{row['vs_vjp']:.2f}x vjp; bwd alone {best['bwd']:.3f} ms = {100 * row['bwd_roofline']:.0f}% of a copy",
                  flush=True)
            if args.json:
                Path(args.json).write_text(json.dumps(results, indent=1) + "\n")
            del xs, g, leaves, src, dst


if __name__ == "__main__":
    main()
