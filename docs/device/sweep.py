"""The elementwise expression sweep (issue 13): does the elementwise kernel hold the roofline on any
expression the grammar accepts?

    python docs/device/sweep.py generate OUT [--seed 13] [--count 40]    # dev machine (needs copier)
    python docs/device/sweep.py run OUT/sweep-ops [--sizes 16777216,268435456] [--json FILE]   # GPU

`generate` writes one library package (namespace `sweep`) holding a fixed list of expressions plus
random ones drawn from the grammar with a recorded seed (1-8 inputs, 0-6 transcendental calls, pow
and **, min/max, deep nesting), and OUT/sweep.json describing them. One build serves all of them.
Build it on the GPU machine with `NVCC_APPEND_FLAGS="-Xptxas -v"` and keep the log: `run --build-log`
reads each kernel's registers per thread and spills from it.

`run` times every op against torch.compile of its reference and a device copy, in the same process,
for every dtype and size (triton.testing.do_bench, median, L2 flushed), and prints the distribution
of the ratios (min, median), the ten worst cases with their registers, and JSON.

Status: written and its `generate` step tested on the dev machine (tests/test_sweep.py); not yet run
on the GPU (the session that wrote it had no device time left). See docs/design.md, open threads.
"""

from __future__ import annotations

import argparse
import json
import random
import re
import statistics
import sys
from pathlib import Path

FIXED: list[tuple[str, str]] = [
    ("x", "x * 2"),
    ("x", "x * sigmoid(1.702 * x)"),
    ("x", "0.5 * x * (1 + erf(x * 0.7071067811865476))"),
    ("x", "0.5 * x * (1 + tanh(0.7978845608 * (x + 0.044715 * x ** 3)))"),
    ("x", "exp(sin(x)) * cos(x) + log(abs(x) + 1)"),
    ("a,b", "a * sigmoid(a) * b"),
    ("a,b", "max(a, b) - min(a, b)"),
    ("a,b,c", "a * b + c"),
    ("a,b,c", "a * rsqrt(b * b + 1e-6) + c ** 3"),  # the 3-input rsqrt + cube case of the issue
    ("a,b,c,d", "(a + b) / (abs(c) + 1) * d"),
    ("a,b,c,d,e", "(a * b - c) / (d * d + e * e + 1)"),
    ("a,b,c,d,x5,x6,x7,x8", "a * b + c * d + x5 * x6 + x7 * x8"),
    ("x,y", "pow(abs(x) + 1, y * 0.5)"),
    ("x", "tanh(tanh(tanh(tanh(tanh(tanh(x))))))"),
]
UNARY = ["exp", "log", "sqrt", "rsqrt", "tanh", "sigmoid", "abs", "sin", "cos", "erf"]
POSITIVE = {"log", "sqrt", "rsqrt"}  # wrapped as f(abs(e) + 1) so that the values stay finite


def random_expression(rng: random.Random, inputs: list[str], calls: int, depth: int) -> str:
    """A random expression over ``inputs`` using exactly ``calls`` unary transcendental calls."""
    leaves = list(inputs)
    rng.shuffle(leaves)

    def build(names: list[str], calls_left: int, level: int) -> str:
        if len(names) == 1 and calls_left == 0:
            if level < depth and rng.random() < 0.3:
                return f"({names[0]} {rng.choice('+-*')} {rng.choice(['0.5', '2', '1.5'])})"
            return names[0]
        if len(names) == 1:
            func = rng.choice(UNARY)
            inner = build(names, calls_left - 1, level + 1)
            if func in POSITIVE:
                return f"{func}(abs({inner}) + 1)"
            if rng.random() < 0.2:
                return f"({func}({inner})) ** {rng.choice(['2', '3'])}"
            return f"{func}({inner})"
        split = rng.randint(1, len(names) - 1)
        left_calls = rng.randint(0, calls_left)
        left = build(names[:split], left_calls, level + 1)
        right = build(names[split:], calls_left - left_calls, level + 1)
        op = rng.choice(["+", "-", "*", "/", "max", "min", "pow"])
        if op in ("max", "min"):
            return f"{op}({left}, {right})"
        if op == "pow":
            return f"pow(abs({left}) + 1, {right} * 0.25)"
        if op == "/":
            return f"({left}) / (abs({right}) + 1)"
        return f"({left}) {op} ({right})"

    return build(leaves, calls, 0)


def expressions(seed: int, count: int) -> list[dict[str, object]]:
    """The fixed list, then random expressions up to ``count`` in all (seeded, reproducible)."""
    from kernelgen.expr import parse

    rng = random.Random(seed)
    names = [f"x{i}" for i in range(1, 9)]  # single letters such as f and k are template locals
    chosen = [{"inputs": inputs.split(","), "expr": text, "origin": "fixed"} for inputs, text in FIXED]
    while len(chosen) < count:
        n_inputs = rng.randint(1, 8)
        text = random_expression(rng, names[:n_inputs], rng.randint(0, 6), rng.randint(2, 6))
        chosen.append({"inputs": names[:n_inputs], "expr": text, "origin": f"random (seed {seed})"})
    for item in chosen:  # canonical text: what the op records
        item["expr"] = parse(str(item["expr"]), tuple(item["inputs"])).source  # type: ignore[arg-type]
    return chosen


def generate(out: Path, seed: int, count: int) -> Path:
    from kernelgen.render import generate as write_package
    from kernelgen.spec import OpSpec, PackageSpec

    items = expressions(seed, count)
    ops = [
        OpSpec.create(f"e{index:02d}", inputs=item["inputs"], expr=str(item["expr"]), namespace="sweep")  # type: ignore[arg-type]
        for index, item in enumerate(items)
    ]
    pkg = PackageSpec.for_new_op(ops[0], name="sweep-ops")
    for op in ops[1:]:
        pkg = pkg.with_op(op)
    out.mkdir(parents=True, exist_ok=True)
    root = write_package(pkg, out, force=False)
    manifest = {"seed": seed, "ops": [{"name": op.op_name, **item} for op, item in zip(ops, items, strict=True)]}
    (out / "sweep.json").write_text(json.dumps(manifest, indent=2) + "\n")
    return root


def registers_from_log(log: str) -> dict[str, dict[str, int]]:
    """Per op: the most registers and spill bytes of its vector-path kernels at sm_90 (ptxas -v)."""
    found: dict[str, dict[str, int]] = {}
    entry = None
    for line in log.splitlines():
        m = re.search(r"Compiling entry function '_ZN(\d+)(e\d\d)\w*_kernel\w*' for 'sm_90'", line)
        if m:
            entry = m.group(2)
            continue
        m = re.search(r"(\d+) bytes spill stores", line)
        if m and entry:
            found.setdefault(entry, {"registers": 0, "spill_bytes": 0})
            found[entry]["spill_bytes"] = max(found[entry]["spill_bytes"], int(m.group(1)))
        m = re.search(r"Used (\d+) registers", line)
        if m and entry:
            found.setdefault(entry, {"registers": 0, "spill_bytes": 0})
            found[entry]["registers"] = max(found[entry]["registers"], int(m.group(1)))
            entry = None
    return found


def run(package: Path, sizes: list[int], dtypes: list[str], json_path: str | None, build_log: str | None) -> None:
    import importlib

    import torch
    from triton.testing import do_bench

    manifest = json.loads((package.parent / "sweep.json").read_text())
    sys.path.insert(0, str(package))
    module = importlib.import_module("sweep_ops")
    regs = registers_from_log(Path(build_log).read_text()) if build_log else {}
    results = []
    for op in manifest["ops"]:
        fn = getattr(module, op["name"])
        reference = importlib.import_module(f"sweep_ops.ops.{op['name']}").reference
        for dtype_name in dtypes:
            dtype = getattr(torch, dtype_name)
            for n in sizes:
                gen = torch.Generator("cuda").manual_seed(n)
                args = [torch.empty(n, dtype=dtype, device="cuda").normal_(generator=gen) for _ in op["inputs"]]
                torch._dynamo.reset()
                compiled = torch.compile(reference, dynamic=False)
                dst = torch.empty_like(args[0])
                ours = do_bench(lambda fn=fn, args=args: fn(*args), return_mode="median")
                theirs = do_bench(lambda compiled=compiled, args=args: compiled(*args), return_mode="median")
                copy = do_bench(lambda dst=dst, src=args[0]: dst.copy_(src), return_mode="median")
                moved = (len(args) + 1) * n * args[0].element_size()
                results.append({
                    "op": op["name"], "expr": op["expr"], "inputs": len(op["inputs"]), "dtype": dtype_name, "n": n,
                    "us": ours * 1e3, "vs_compile": theirs / ours,
                    "pct_of_copy": 100 * (moved / ours) / (2 * n * args[0].element_size() / copy),
                    **regs.get(op["name"], {}),
                })
                print(f"{op['name']} {dtype_name} {n}: {theirs / ours:.2f}x compile, "
                      f"{results[-1]['pct_of_copy']:.0f}% of copy", flush=True)
    ratios = [r["vs_compile"] for r in results if r["n"] == max(sizes)]
    print(f"\nat n={max(sizes)}: min {min(ratios):.2f}x, median {statistics.median(ratios):.2f}x torch.compile "
          f"over {len(ratios)} cases")
    print("ten worst:")
    for r in sorted(results, key=lambda r: r["vs_compile"])[:10]:
        print(f"  {r['vs_compile']:.2f}x {r['pct_of_copy']:.0f}% {r['dtype']} n={r['n']} {r.get('registers', '?')} regs "
              f"{r.get('spill_bytes', '?')} B spilled: {r['op']} = {r['expr']}")
    if json_path:
        Path(json_path).write_text(json.dumps({"seed": manifest["seed"], "rows": results}, indent=2))


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    g = sub.add_parser("generate")
    g.add_argument("out", type=Path)
    g.add_argument("--seed", type=int, default=13)
    g.add_argument("--count", type=int, default=40)
    r = sub.add_parser("run")
    r.add_argument("package", type=Path)
    r.add_argument("--sizes", default=f"{2**24},{2**28}")
    r.add_argument("--dtypes", default="float32,float64,float16,bfloat16")
    r.add_argument("--json")
    r.add_argument("--build-log")
    args = parser.parse_args(argv)
    if args.command == "generate":
        print(f"wrote {generate(args.out, args.seed, args.count)}")
    else:
        run(args.package, [int(s) for s in args.sizes.split(",")], args.dtypes.split(","), args.json, args.build_log)


if __name__ == "__main__":
    main()
