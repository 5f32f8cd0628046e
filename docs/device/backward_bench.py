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

and prints one row per cell with the ratios (ours vs compile, ours vs vjp) and writes JSON, then the
distribution of the ratios to compile per dtype and the ten worst cells.

    --against compile        time only ours, compile and the backward alone (vjp and eager take 10-50 ms a
                             step at 2^26: most of a sweep's time)
    --graphs                 also time ours' and compile's forward+backward replayed from a CUDA graph each: the
                             GPU's time without the host's. A step of one op at 2^26 elements takes the host
                             0.5-1 ms on the H200 machines (docs/device/host_overhead.py, stop 70), longer than
                             the GPU's work in bfloat16, so the eager figures there time the host
    --prewarm --part i/n     compile the references of every n-th op from i (forward and backward, each dtype
                             and shape) and time nothing: n such processes side by side fill Inductor's cache
                             on disk, and the timing run then loads the compiled code (as rowwise_sweep.py's)
    --registered             with --graphs, also time ours through the registered op (torch.ops.<ns>.<op>, whose
                             backward computes the forward's per-row values again) replayed from a CUDA graph:
                             against ours (the eager training path, which saves them), the saved values' worth
    --compiled-ours          with --graphs, also time ours inside torch.compile, replayed from a CUDA graph: the
                             public function (which records <op>_train, saving the per-row values) and the
                             registered op (computing them again), the saved values' worth under compile
"""

from __future__ import annotations

import argparse
import importlib
import json
import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from paths_common import graphed_replay  # noqa: E402


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
    parser.add_argument("--against", default="vjp,eager,compile", help="the baselines timed (compile always)")
    parser.add_argument("--graphs", action="store_true", help="also time fwd+bwd replayed from CUDA graphs")
    parser.add_argument("--prewarm", action="store_true", help="compile the references, time nothing")
    parser.add_argument("--registered", action="store_true", help="with --graphs, also time the registered op's fwd+bwd")
    parser.add_argument("--compiled-ours", action="store_true",
                        help="with --graphs, also time ours inside torch.compile (the public function and the registered op)")
    parser.add_argument("--part", default="0/1", help="i/n: every n-th op from the i-th (with --prewarm)")
    args = parser.parse_args(argv)
    against = {"compile", *(name for name in args.against.split(",") if name)}
    unknown = against - {"vjp", "eager", "compile"}
    if unknown:
        parser.error(f"--against: unknown baseline(s) {', '.join(sorted(unknown))} (vjp, eager, compile)")
    part, parts = (int(v) for v in args.part.split("/"))

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
    if args.prewarm:
        ops = ops[part::parts]
    print(f"{len(ops)} ops with a generated backward: {', '.join(name for name, _ in ops)}", flush=True)

    def bench(fn) -> float:
        return do_bench(fn, warmup=10, rep=60, return_mode="median")

    def graphed(fn):
        """fn's replay from a CUDA graph (paths_common.graphed_replay); None where the capture fails (its error
        printed)."""
        try:
            return graphed_replay(torch, fn)
        except Exception as error:  # reported, the cell keeps its eager figures
            print(f"    capture failed: {type(error).__name__}: {str(error).splitlines()[0][:200]}", flush=True)
            return None

    results = []
    for name, module in ops:
        call = getattr(package, name)
        overload = getattr(getattr(torch.ops, namespace), name).default
        backward = getattr(getattr(torch.ops, namespace), f"{name}_backward").default
        n_args = module.reference.__code__.co_argcount
        kind, n_weights = kinds.get(name, ("elementwise", 0))
        n_inputs = n_args - n_weights
        compiled = torch.compile(module.reference, dynamic=False)
        ours_compiled = torch.compile(call, dynamic=False) if args.compiled_ours else None
        registered_compiled = torch.compile(overload, dynamic=False) if args.compiled_ours else None

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
            if args.prewarm:
                continue  # nothing timed: the next cell's tensors replace these
            best = {key: float("inf") for key in ("ours", "vjp", "eager", "compile", "bwd", "ours_graph", "compile_graph",
                                                  "registered_graph", "ours_compiled_graph", "registered_compiled_graph")}
            replays = {}
            if args.graphs:
                replays = {"ours_graph": graphed(lambda: fwd_bwd(call)), "compile_graph": graphed(lambda: fwd_bwd(compiled))}
                if args.registered:
                    replays["registered_graph"] = graphed(lambda: fwd_bwd(overload))
                if args.compiled_ours:
                    for key, fn in (("ours_compiled_graph", ours_compiled), ("registered_compiled_graph", registered_compiled)):
                        fwd_bwd(fn)  # compile forward and backward before the capture
                        replays[key] = graphed(lambda fn=fn: fwd_bwd(fn))
            for _ in range(args.rounds):
                best["ours"] = min(best["ours"], bench(lambda: fwd_bwd(call)))
                if "vjp" in against:
                    best["vjp"] = min(best["vjp"], bench(lambda: fwd_bwd(via_vjp.apply)))
                if "eager" in against:
                    best["eager"] = min(best["eager"], bench(lambda: fwd_bwd(module.reference)))
                best["compile"] = min(best["compile"], bench(lambda: fwd_bwd(compiled)))
                best["bwd"] = min(best["bwd"], bench(lambda: backward(g, *xs, [True] * n_args)))
                for key, replay in replays.items():
                    if replay is not None:
                        best[key] = min(best[key], bench(replay))
            moved = (2 * n_inputs + 1) * args.size * xs[0].element_size()
            src = torch.empty(moved // xs[0].element_size() // 2, dtype=dtype, device="cuda")
            dst = torch.empty_like(src)
            copy_ms = bench(lambda: dst.copy_(src))
            row = {"op": name, "kind": kind, "dtype": dtype_name, "size": args.size, "cols": shape[-1],
                   **{f"{k}_ms": v if v < float("inf") else None for k, v in best.items()},
                   "vs_compile": best["compile"] / best["ours"],
                   "vs_vjp": best["vjp"] / best["ours"] if "vjp" in against else None,
                   "vs_eager": best["eager"] / best["ours"] if "eager" in against else None,
                   "bwd_roofline": copy_ms / best["bwd"],
                   "graph_vs_compile": best["compile_graph"] / best["ours_graph"] if args.graphs else None,
                   "saved_speedup": best["registered_graph"] / best["ours_graph"] if args.graphs and args.registered else None,
                   "compiled_saved_speedup": (best["registered_compiled_graph"] / best["ours_compiled_graph"]
                                              if args.graphs and args.compiled_ours else None),
                   "compiled_vs_compile": (best["compile_graph"] / best["ours_compiled_graph"]
                                           if args.graphs and args.compiled_ours else None)}
            for key in ("vjp", "eager"):
                if key not in against:
                    row[f"{key}_ms"] = None
            results.append(row)
            graphs = (f"; graphs: ours {best['ours_graph']:.3f}, compile {best['compile_graph']:.3f} ms, "
                      f"{row['graph_vs_compile']:.2f}x compile" if args.graphs else "")
            if row["saved_speedup"] is not None:
                graphs += f"; registered op {best['registered_graph']:.3f} ms (ours {row['saved_speedup']:.2f}x faster)"
            if row["compiled_saved_speedup"] is not None:
                graphs += (f"; in compile: ours {best['ours_compiled_graph']:.3f} ms ({row['compiled_vs_compile']:.2f}x compile), "
                           f"registered op {best['registered_compiled_graph']:.3f} ms (ours {row['compiled_saved_speedup']:.2f}x faster)")
            others = "".join(f", {key} {best[key]:.3f}" for key in ("vjp", "eager") if key in against)
            versus = f", {row['vs_vjp']:.2f}x vjp" if "vjp" in against else ""
            print(f"{name:12s} {dtype_name:9s} {shape[-1]:>9d} fwd+bwd ours {best['ours']:.3f} ms{others}, compile "
                  f"{best['compile']:.3f}: {row['vs_compile']:.2f}x compile{versus}; bwd alone {best['bwd']:.3f} ms = "
                  f"{100 * row['bwd_roofline']:.0f}% of a copy{graphs}", flush=True)
            if args.json:
                Path(args.json).write_text(json.dumps(results, indent=1) + "\n")
            del xs, g, leaves, src, dst
    if args.prewarm:
        print(f"prewarmed {len(ops)} ops", flush=True)
    else:
        print(summary(results), flush=True)


def summary(results: list[dict]) -> str:
    """The ratios to compile per dtype (cells, min, median, cells >= 1.0x and >= 0.95x), then the ten worst
    cells with their backward alone against a copy."""
    lines = []
    for key, title in (("vs_compile", "eager"), ("graph_vs_compile", "CUDA graphs")):
        lines.append(f"fwd+bwd against compile, {title}:")
        lines.append("dtype      cells    min  median  >=1.0x  >=0.95x")
        for dtype in sorted({row["dtype"] for row in results}):
            ratios = sorted(row[key] for row in results if row["dtype"] == dtype and row.get(key) is not None)
            if not ratios:
                continue
            middle = len(ratios) // 2
            median = ratios[middle] if len(ratios) % 2 else (ratios[middle - 1] + ratios[middle]) / 2
            lines.append(f"{dtype:9s} {len(ratios):6d} {ratios[0]:6.2f} {median:7.2f} {sum(r >= 1.0 for r in ratios):7d} "
                         f"{sum(r >= 0.95 for r in ratios):8d}")
    lines.append("worst cells:")
    for row in sorted(results, key=lambda r: r["vs_compile"])[:10]:
        lines.append(f"  {row['op']:10s} {row['dtype']:9s} {row['cols']:>7d}  {row['vs_compile']:.2f}x compile, "
                     f"backward alone {100 * row['bwd_roofline']:.0f}% of a copy")
    return "\n".join(lines)


if __name__ == "__main__":
    main()
