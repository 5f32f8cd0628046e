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
for every dtype and size (triton.testing.do_bench, median, L2 flushed; --rounds interleaved rounds, 3 by
default, each side keeping its fastest round's median), and prints the distribution
of the ratios (min, median), the ten worst cases with their registers, and JSON.

`prewarm --part I/N` compiles every N-th reference from I ahead of `run`, so that several processes
fill Inductor's and Triton's caches side by side (docs/device/sweep.sh runs three) and `run` only
times. `summary` prints the distribution again from one or more JSON files.
"""

from __future__ import annotations

import argparse
import json
import os
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
        if text in names:
            continue  # a bare input: torch.compile returns it without a copy, nothing to compare
        chosen.append({"inputs": names[:n_inputs], "expr": text, "origin": f"random (seed {seed})"})
    for item in chosen:  # canonical text: what the op records
        item["expr"] = parse(str(item["expr"]), tuple(item["inputs"])).source  # type: ignore[arg-type]
    return chosen


def generate(out: Path, seed: int, count: int, name: str = "sweep-ops", min_inputs: int = 1,
             only: set[str] | None = None, backend: str = "cuda") -> Path:
    """One package ``name`` (namespace: its first word) of the expressions with at least ``min_inputs``
    inputs (and, given ``only``, named in it), op eNN numbered as in the full list, on ``backend``."""
    from kernelgen.render import generate as write_package
    from kernelgen.spec import OpSpec, PackageSpec

    items = expressions(seed, count)
    ops = [
        OpSpec.create(f"e{index:02d}", inputs=item["inputs"], expr=str(item["expr"]),  # type: ignore[arg-type]
                      namespace=name.split("-")[0], backend=backend)
        for index, item in enumerate(items)
    ]
    kept = [index for index, item in enumerate(items)
            if len(item["inputs"]) >= min_inputs and (only is None or f"e{index:02d}" in only)]
    ops, items = [ops[i] for i in kept], [items[i] for i in kept]
    pkg = PackageSpec.for_new_op(ops[0], name=name)
    for op in ops[1:]:
        pkg = pkg.with_op(op)
    out.mkdir(parents=True, exist_ok=True)
    root = write_package(pkg, out, force=False)
    manifest = {"seed": seed, "ops": [{"name": op.op_name, **item} for op, item in zip(ops, items, strict=True)]}
    (out / "sweep.json").write_text(json.dumps(manifest, indent=2) + "\n")
    return root


_MANGLED_DTYPES = {"f": "float32", "d": "float64", "N3c104HalfE": "float16", "N3c108BFloat16E": "bfloat16"}
REGISTERS_PER_SM = 65536
THREADS_PER_BLOCK = 256  # the template's kThreadsPerBlock
MAX_THREADS_PER_SM = 2048


def force_packs(package: Path) -> int:
    """Experiment build: every op's launcher takes its packs per thread (1, 2 or 4) from the environment
    variable KG_SWEEP_PACKS when it is set (`run --packs 1,2,4` times each), else the template's rule.
    The launcher is the package's (csrc/kernelgen/elementwise.cuh): one patch serves every op."""
    header = next(package.glob("*/csrc/kernelgen/elementwise.cuh"))
    text = header.read_text()
    m = re.search(r"(  static void vec\([^)]*\) \{\n)", text)
    assert m, header
    forced = ('    if (const char* forced = std::getenv("KG_SWEEP_PACKS")) {\n'
              + "".join(f"      if (std::atoi(forced) == {p}) {{\n        Launch::packs<kVec, {p}>(in..., out, n, stream);\n"
                        "        return;\n      }\n" for p in (1, 2, 4))
              + "    }\n")
    header.write_text("#include <cstdlib>\n" + text.replace(m.group(1), m.group(1) + forced, 1))
    return len(list(package.glob("*/csrc/e[0-9][0-9]/cuda/e[0-9][0-9]_kernel.cu")))


def registers_from_log(log: str) -> dict[str, dict[str, dict[str, int]]]:
    """ptxas -v at sm_90: op -> "dtype/kVec/kPacks" -> registers and spill bytes of that kernel."""
    found: dict[str, dict[str, dict[str, int]]] = {}
    key = None
    for line in log.splitlines():
        # The package's kernel, kg::elementwise::kernel<eNN::Op, dtype, kVec, kPacks, kBlocksPerSm, ...>.
        m = re.search(r"Compiling entry function '_ZN2kg11elementwise\w*?kernelIN\d+(e\d\d)\w*?OpE"
                      r"(f|d|N3c104HalfE|N3c108BFloat16E)Li(\d+)ELi(\d+)ELi(\d+)E\w*' for 'sm_90'", line)
        if m:
            wide = "/wide" if m.group(5) == "3" else ""  # the one-pack kernel of kWideMinBlocksPerSm
            key = (m.group(1), f"{_MANGLED_DTYPES[m.group(2)]}/{m.group(3)}/{m.group(4)}{wide}")
            found.setdefault(key[0], {})[key[1]] = {"registers": 0, "spill_bytes": 0}
            continue
        if key is None:
            continue
        entry = found[key[0]][key[1]]
        m = re.search(r"(\d+) bytes spill stores", line)
        if m:
            entry["spill_bytes"] = int(m.group(1))
        m = re.search(r"Used (\d+) registers", line)
        if m:
            entry["registers"] = int(m.group(1))
            key = None
    return found


def occupancy(registers: int) -> float:
    """Theoretical occupancy of a 256-thread block using ``registers`` per thread on an H100 (registers
    are allocated per warp in units of 256, i.e. 8 per thread)."""
    per_thread = -(-max(registers, 1) // 8) * 8
    blocks = min(REGISTERS_PER_SM // (per_thread * THREADS_PER_BLOCK), MAX_THREADS_PER_SM // THREADS_PER_BLOCK)
    return blocks * THREADS_PER_BLOCK / MAX_THREADS_PER_SM


def kernel_facts(regs: dict[str, dict[str, int]], dtype: str, inputs: int) -> dict[str, object]:
    """Registers, spills and occupancy of the vector kernel with the most packs per thread, and every
    pack count's registers. ``packs`` is that largest count, not necessarily the one the launcher runs:
    the kernel's choose_packs picks at run time from these figures and the expression's math cost."""
    # The vector kernels: the widest kVec compiled for this dtype (16-byte accesses, or 8 for light float32
    # ops of 2+ inputs; kVec 1 is the misaligned path).
    vecs = [int(key.split("/")[1]) for key in regs if key.startswith(f"{dtype}/") and key.count("/") == 2]
    if not vecs:
        return {}
    vec = max(vecs)
    mine = {key: value for key, value in regs.items() if key.startswith(f"{dtype}/{vec}/") and key.count("/") == 2}
    key = max(mine, key=lambda k: int(k.split("/")[2]))
    return {"packs": int(key.split("/")[2]), **mine[key], "occupancy": occupancy(mine[key]["registers"]),
            "bytes_in_flight_per_thread": vec * {"float32": 4, "float64": 8, "float16": 2, "bfloat16": 2}[dtype] * inputs
            * int(key.split("/")[2]),
            "registers_by_packs": {k.split("/")[2]: v["registers"] for k, v in sorted(mine.items())}}


def _items(manifest: dict, dtypes: list[str], sizes: list[int], part: str | None):
    ops = manifest["ops"]
    if part:
        index, count = (int(v) for v in part.split("/"))
        ops = ops[index::count]
    for op in ops:
        for dtype_name in dtypes:
            for n in sizes:
                yield op, dtype_name, n


def _inputs(op: dict, dtype, n: int):
    import torch

    gen = torch.Generator("cuda").manual_seed(n)
    return [torch.empty(n, dtype=dtype, device="cuda").normal_(generator=gen) for _ in op["inputs"]]


def prewarm(package: Path, sizes: list[int], dtypes: list[str], part: str) -> None:
    """Compile the references of one part of the ops (e.g. ``0/3``) so that the timing process finds
    Inductor's and Triton's caches warm (several of these run side by side on the GPU machine)."""
    import importlib

    import torch

    torch._dynamo.config.cache_size_limit = 64
    manifest = json.loads((package.parent / "sweep.json").read_text())
    sys.path.insert(0, str(package))
    for op, dtype_name, n in _items(manifest, dtypes, sizes, part):
        reference = importlib.import_module(f"sweep_ops.ops.{op['name']}").reference
        args = _inputs(op, getattr(torch, dtype_name), n)
        torch.compile(reference, dynamic=False)(*args)
        del args
        torch.cuda.empty_cache()
    print(f"prewarmed part {part}", flush=True)


def run(package: Path, sizes: list[int], dtypes: list[str], json_path: str | None, build_log: str | None,
        packs: list[int] | None = None, rounds: int = 3) -> None:
    import importlib

    import torch
    from triton.testing import do_bench

    torch._dynamo.config.cache_size_limit = 64
    manifest = json.loads((package.parent / "sweep.json").read_text())
    sys.path.insert(0, str(package))
    module = importlib.import_module("sweep_ops")
    regs = registers_from_log(Path(build_log).read_text()) if build_log else {}
    results: list[dict[str, object]] = []
    copies: dict[tuple[str, int], float] = {}
    compiled = {}

    def bench(fn) -> float:
        return do_bench(fn, warmup=10, rep=60, return_mode="median")

    for op, dtype_name, n in _items(manifest, dtypes, sizes, None):
        dtype = getattr(torch, dtype_name)
        fn = getattr(module, op["name"])
        if op["name"] not in compiled:
            reference = importlib.import_module(f"sweep_ops.ops.{op['name']}").reference
            compiled[op["name"]] = torch.compile(reference, dynamic=False)
        args = _inputs(op, dtype, n)
        theirs_fn = compiled[op["name"]]
        theirs_fn(*args)  # compile (from the prewarmed caches) before timing
        if (dtype_name, n) not in copies:
            dst = torch.empty_like(args[0])
            copies[(dtype_name, n)] = bench(lambda dst=dst, src=args[0]: dst.copy_(src))
            del dst
        # Interleaved rounds, each implementation keeping its fastest round's median (the method of the
        # generated benchmarks' harness): a clock or host hiccup during one measurement no longer decides
        # a ratio, and both sides get the same chances.
        ours_rounds, theirs_rounds = [], []
        for _ in range(rounds):
            ours_rounds.append(bench(lambda fn=fn, args=args: fn(*args)))
            theirs_rounds.append(bench(lambda fn=theirs_fn, args=args: fn(*args)))
        ours, theirs = min(ours_rounds), min(theirs_rounds)
        forced = {}
        for p in packs or []:  # a build patched by force_packs
            os.environ["KG_SWEEP_PACKS"] = str(p)
            forced[p] = bench(lambda fn=fn, args=args: fn(*args)) * 1e3
            del os.environ["KG_SWEEP_PACKS"]
        copy = copies[(dtype_name, n)]
        size = args[0].element_size()
        moved = (len(args) + 1) * n * size
        copy_rate = 2 * n * size / copy
        row = {
            "op": op["name"], "expr": op["expr"], "inputs": len(op["inputs"]), "dtype": dtype_name, "n": n,
            "us": ours * 1e3, "compile_us": theirs * 1e3, "vs_compile": theirs / ours,
            "rounds_us": [t * 1e3 for t in ours_rounds], "compile_rounds_us": [t * 1e3 for t in theirs_rounds],
            "pct_of_copy": 100 * (moved / ours) / copy_rate,
            "compile_pct_of_copy": 100 * (moved / theirs) / copy_rate,
            "calls": len(re.findall(r"[a-z]+\(", op["expr"])),
            **kernel_facts(regs.get(op["name"], {}), dtype_name, len(op["inputs"])),
        }
        if forced:
            row["forced_us"] = {p: us for p, us in forced.items()}
            row["forced_registers"] = {p: row.get("registers_by_packs", {}).get(str(p)) for p in forced}
        results.append(row)
        print(f"{op['name']} {dtype_name} {n}: {row['vs_compile']:.2f}x compile, {row['pct_of_copy']:.0f}% of copy "
              f"(compile {row['compile_pct_of_copy']:.0f}%), {row.get('registers', '?')} regs"
              + "".join(f", P={p} {theirs * 1e3 / us:.2f}x" for p, us in forced.items()), flush=True)
        del args
        if json_path:
            Path(json_path).write_text(json.dumps({"seed": manifest["seed"], "rows": results}, indent=1))
    summarize(results, sizes)


def summarize(results: list[dict], sizes: list[int]) -> None:
    for n in sorted(set(sizes)):
        for dtype in sorted({r["dtype"] for r in results}):
            ratios = [r["vs_compile"] for r in results if r["n"] == n and r["dtype"] == dtype]
            if ratios:
                print(f"n={n} {dtype}: min {min(ratios):.2f}x, median {statistics.median(ratios):.2f}x torch.compile "
                      f"over {len(ratios)} expressions")
    print("ten worst:")
    for r in sorted(results, key=lambda r: r["vs_compile"])[:10]:
        bound = " [both below 90% of copy]" if r["pct_of_copy"] < 90 and r["compile_pct_of_copy"] < 90 else ""
        by_packs = ", ".join(f"P={p}: {v} ({occupancy(v):.0%})" for p, v in (r.get("registers_by_packs") or {}).items())
        print(f"  {r['vs_compile']:.2f}x {r['pct_of_copy']:.0f}% (compile {r['compile_pct_of_copy']:.0f}%) {r['dtype']} "
              f"n={r['n']} registers (occupancy) {by_packs or '?'}, math {r.get('calls', '?')} calls{bound}: {r['op']} = {r['expr']}")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    g = sub.add_parser("generate")
    g.add_argument("out", type=Path)
    g.add_argument("--seed", type=int, default=13)
    g.add_argument("--count", type=int, default=40)
    g.add_argument("--name", default="sweep-ops", help="package name (the namespace is its first word)")
    g.add_argument("--min-inputs", type=int, default=1, help="only the expressions with this many inputs or more")
    g.add_argument("--only", default="", help="only these ops, comma-separated (e13,e31)")
    g.add_argument("--backend", default="cuda", choices=("cuda", "triton"))
    r = sub.add_parser("run")
    r.add_argument("package", type=Path)
    r.add_argument("--sizes", default=f"{2**24},{2**28}")
    r.add_argument("--dtypes", default="float32,float64,float16,bfloat16")
    r.add_argument("--json")
    r.add_argument("--build-log")
    r.add_argument("--packs", default="", help="also time these packs per thread (a force-packs build)")
    r.add_argument("--rounds", type=int, default=3, help="interleaved rounds; each side keeps its fastest median")
    f = sub.add_parser("force-packs")
    f.add_argument("package", type=Path)
    w = sub.add_parser("prewarm")
    w.add_argument("package", type=Path)
    w.add_argument("--sizes", default=f"{2**24},{2**28}")
    w.add_argument("--dtypes", default="float32,float64,float16,bfloat16")
    w.add_argument("--part", default="0/1", help="INDEX/COUNT: every COUNT-th op from INDEX")
    s = sub.add_parser("summary")
    s.add_argument("json", nargs="+")
    args = parser.parse_args(argv)
    if args.command == "generate":
        only = set(args.only.split(",")) if args.only else None
        print(f"wrote {generate(args.out, args.seed, args.count, args.name, args.min_inputs, only, args.backend)}")
    elif args.command == "prewarm":
        prewarm(args.package, [int(v) for v in args.sizes.split(",")], args.dtypes.split(","), args.part)
    elif args.command == "force-packs":
        print(f"patched {force_packs(args.package)} kernels")
    elif args.command == "summary":
        rows = [row for path in args.json for row in json.loads(Path(path).read_text())["rows"]]
        summarize(rows, sorted({row["n"] for row in rows}))
    else:
        run(args.package, [int(v) for v in args.sizes.split(",")], args.dtypes.split(","), args.json, args.build_log,
            [int(v) for v in args.packs.split(",") if v], args.rounds)


if __name__ == "__main__":
    main()
