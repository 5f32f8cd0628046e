"""The rowwise expression sweep (issue 28): does the rowwise kind hold the roofline on any expression
its grammar accepts, on both backends, for short and long rows?

    python docs/device/rowwise_sweep.py generate OUT [--seed 28] [--count 40] [--backends cuda,triton]   # here
    python docs/device/rowwise_sweep.py run OUT/rsweep-ops [--cols 1024,4096] [--only resrms,csilu] ...  # GPU
    python docs/device/rowwise_sweep.py summary FILE.json...                                         # anywhere

`generate` (on the dev machine: it needs copier) writes ONE library package, OUT/rsweep-ops (namespace
`rsweep`), holding a fixed list of expressions (the four examples, the issue's `resrms` and `csilu`, a
weight inside a reduction, two-input ops, a logsumexp, ...) and seeded random ones from the rowwise
grammar (1-4 inputs, 0-3 weights, 1-4 distinct reductions nested up to 3 deep, a subexpression shared
by the reductions and the output, 0-4 transcendental calls inside and outside the reductions,
weights inside a reduction and only in the output), each as a CUDA C++ op `<id>` and a Triton op
`<id>_tl`, and OUT/rowwise_sweep.json describing them. Every expression is accepted by kernelgen (its
OpSpec is built), and its values stay finite on normal inputs and weights in [0.5, 1.5]: log, sqrt and
rsqrt take abs(e) + 1 or a sum of squares plus an epsilon, exp takes -abs(e) or e - max(e), sums are
divided into the output, never added to it (a float16 output overflows at 65504).

`run` (on the GPU machine, where the package was built with NVCC_APPEND_FLAGS="-Xptxas -v" and the log
kept: --build-log) builds nothing. For every op, dtype and row length it times the op against
torch.compile of its reference and a device-to-device copy of one input, in the same process: do_bench
medians, L2 flushed, --rounds interleaved rounds with each side keeping its fastest. One compiled
reference serves an expression's two backends. The copy roofline counts the inputs read once, the
weights once and the output written once. It prints the distribution per backend, dtype and row length
(min, median, how many cells reach 0.95x), the ten worst cells with their kernel's registers, spills
and occupancy (CUDA: the ptxas log; Triton: the compiled kernel's n_regs and n_spills), and writes JSON
after every cell (a cut-off run keeps what it measured). --only, --limit, --backends, --dtypes and
--cols choose a subset; the number of timed cells and compiled references is printed first.

`prewarm --part I/N` compiles every N-th expression's references (and Triton kernels) ahead of `run`, so
that several processes fill Inductor's and Triton's caches side by side (docs/device/rowwise_sweep.sh).
"""

from __future__ import annotations

import argparse
import json
import random
import re
import statistics
import sys
import time
from pathlib import Path

PACKAGE = "rsweep-ops"
MODULE = "rsweep_ops"
MANIFEST = "rowwise_sweep.json"

# id, inputs, weights, expression
FIXED: list[tuple[str, str, str, str]] = [
    ("softmax", "x", "", "exp(x - max(x)) / sum(exp(x - max(x)))"),
    ("log_softmax", "x", "", "x - max(x) - log(sum(exp(x - max(x))))"),
    ("rmsnorm", "x", "w", "x * rsqrt(mean(x * x) + 1e-6) * w"),
    ("layernorm", "x", "w,b", "(x - mean(x)) * rsqrt(mean((x - mean(x)) ** 2) + 1e-5) * w + b"),
    # The two: the residual RMSNorm (two inputs, one shared subexpression) and the centred SiLU
    # (a transcendental inside the reduction and again in the output).
    ("resrms", "x,res", "w", "(x + res) * rsqrt(mean((x + res) * (x + res)) + 1e-6) * w"),
    ("csilu", "x", "", "x * sigmoid(x) - mean(x * sigmoid(x))"),
    # A weight inside a reduction (weights are positive in the run: the mean stays positive).
    ("wrms", "x", "w", "x * rsqrt(mean(x * x * w) + 1e-6)"),
    # Two inputs that must both stay live: one normalised by the other's scale; a gated, L1-normalised one.
    ("xbyy", "x,y", "", "(x - mean(x)) * rsqrt(mean(y * y) + 1e-6)"),
    ("gated", "x,g", "", "x * sigmoid(g) / (sum(abs(x * sigmoid(g))) + 1e-6)"),
    # logsumexp, broadcast over the row, and a log-softmax written through it.
    ("lse", "x", "", "log(sum(exp(x - max(x)))) + max(x)"),
    ("lsm_lse", "x", "", "x - (log(sum(exp(x - max(x)))) + max(x))"),
    # A weight inside nested reductions; a residual LayerNorm; four inputs; four reductions.
    ("wsoftmax", "x", "w", "exp(x * w - max(x * w)) / sum(exp(x * w - max(x * w)))"),
    ("resln", "x,res", "w,b",
     "(x + res - mean(x + res)) * rsqrt(mean((x + res - mean(x + res)) ** 2) + 1e-5) * w + b"),
    ("quad4", "a,c,d,e", "w", "(a * c + d - e) * rsqrt(mean((a * c + d - e) ** 2) + 1e-6) * w"),
    ("range4", "x", "", "(x - mean(x)) * rsqrt(mean((x - mean(x)) ** 2) + 1e-5) + max(x) - min(x)"),
]

TRANSCENDENTAL = ("exp", "log", "sqrt", "rsqrt", "tanh", "sigmoid", "sin", "cos", "erf")
BOUNDED = ("tanh", "sigmoid", "sin", "cos", "erf")
REDUCTIONS = ("sum", "mean", "max", "min")
MAX_CALLS = 4


def _call(rng: random.Random, inner: str) -> str:
    """One transcendental call of ``inner`` whose value stays finite on any finite argument."""
    func = rng.choice(TRANSCENDENTAL)
    if func in ("log", "sqrt", "rsqrt"):
        return f"{func}(abs({inner}) + 1)"
    if func == "exp":
        return f"exp(-abs({inner}))"
    return f"{func}({inner})"


def _term(rng: random.Random, names: list[str], calls: int) -> str:
    """An elementwise expression using every name in ``names`` and ``calls`` transcendental calls."""
    if len(names) == 1:
        text = names[0]
        if rng.random() < 0.25:
            text = f"({text} {rng.choice('+-*')} {rng.choice(['0.5', '2', '1.5'])})"
        for _ in range(calls):
            text = _call(rng, text)
        return text
    split = rng.randint(1, len(names) - 1)
    left_calls = rng.randint(0, calls)
    left, right = _term(rng, names[:split], left_calls), _term(rng, names[split:], calls - left_calls)
    op = rng.choice(["+", "-", "*", "*", "/"])
    if op == "/":
        # The square is parenthesised: right may be a sum, and right * right + 1 must stay >= 1 (seed 38's
        # r00 and r16 were drawn before this was so, and divided by values near zero).
        return f"({left}) / (({right}) * ({right}) + 1)"
    return f"({left}) {op} ({right})"


def _random_case(rng: random.Random) -> tuple[list[str], list[str], str]:
    """One random rowwise expression: (inputs, weights, text); kernelgen may still merge equal reductions."""
    inputs = [f"x{i}" for i in range(1, rng.randint(1, 4) + 1)]
    weights = [f"w{i}" for i in range(1, rng.randint(0, 3) + 1)]
    n_reductions = rng.randint(1, 4)
    depth = rng.randint(1, min(3, n_reductions))
    inside_calls = rng.randint(0, 2)
    outside_calls = rng.randint(0, 2)
    # Weights: some inside a reduction, some only in the output (both kinds when there are two or more).
    inside = [w for w in weights if rng.random() < 0.5]
    if len(weights) >= 2 and len(inside) in (0, len(weights)):
        inside = weights[:1] if not inside else weights[1:]
    output_only = [w for w in weights if w not in inside]
    # The subexpression shared by the reductions and the output (resrms' x + res).
    order = list(inputs)
    rng.shuffle(order)
    shared = _term(rng, order, 1 if inside_calls and rng.random() < 0.3 else 0)
    if len(order) > 1 or shared != order[0]:
        shared = f"({shared})"
    reductions: list[tuple[str, str, int, str]] = []  # func, text, nesting, base
    used: set[int] = set()
    for k in range(n_reductions):
        parent = None
        deepest = max((r[2] for r in reductions), default=0)
        if reductions and deepest < depth:
            parent = max(range(len(reductions)), key=lambda i: reductions[i][2])
        base = shared if rng.random() < 0.75 or len(inputs) == 1 else _term(rng, inputs[: rng.randint(1, len(inputs))], 0)
        if parent is not None:
            p_func, p_text, _, p_base = reductions[parent]
            used.add(parent)
            if p_func == "max" and p_base == base and rng.random() < 0.6:
                arg = f"exp({base} - {p_text})"  # softmax's shape: at most 1
            elif p_func == "sum":
                arg = f"{base} / (abs({p_text}) + 1)"
            else:
                arg = f"({base} - {p_text})"
        else:
            arg = base
        if rng.random() < 0.5:
            arg = f"{arg} * {arg}"
        if inside and (k == 0 or rng.random() < 0.4):
            arg = f"{arg} * {rng.choice(inside)}"
        calls_here = rng.randint(0, inside_calls)
        inside_calls -= calls_here
        for _ in range(calls_here):
            arg = _call(rng, arg)
        func = rng.choice(REDUCTIONS)
        reductions.append((func, f"{func}({arg})", 1 if parent is None else reductions[parent][2] + 1, base))
    for w in inside:  # every inside weight in some reduction's argument
        if not any(w in r[1] for r in reductions):
            func, text, nest, base = reductions[0]
            reductions[0] = (func, f"{func}({text[len(func) + 1:-1]} * {w})", nest, base)
    out = shared
    for index, (func, text, _, _) in enumerate(reductions):
        if index in used and rng.random() < 0.7:
            continue  # already inside a later reduction
        # Sums are divided into the output, the other reductions added, subtracted or squashed: no
        # product of two row values, which could pass float16's 65504.
        if func == "sum":
            out = rng.choice([f"{out} / (abs({text}) + 1)", f"{out} * rsqrt(abs({text}) + 1e-6)"])
        else:
            out = rng.choice([f"({out} - {text})", f"({out} + {text})", f"{out} * tanh({text})",
                              f"{out} * rsqrt({text} * {text} + 1e-6)"])
    for w in output_only:
        out = rng.choice([f"{out} * {w}", f"({out} + {w})"])
    for _ in range(outside_calls):
        out = _call(rng, out) if rng.random() < 0.5 else f"{out} * {rng.choice(BOUNDED)}({shared})"
    return inputs, weights, out


def features(parsed) -> dict[str, object]:
    """What an expression exercises: distinct reductions, their nesting, calls inside and outside them."""
    from kernelgen import nodes as ex

    def walk(node, inside: bool, level: int, found: dict[str, int]) -> None:
        if isinstance(node, ex.Reduce):
            found["nesting"] = max(found["nesting"], level + 1)
            walk(node.arg, True, level + 1, found)
            return
        if isinstance(node, ex.Call) and node.func in TRANSCENDENTAL:
            found["calls_inside" if inside else "calls_outside"] += 1
        for child in ex.children(node):
            walk(child, inside, level, found)

    found = {"nesting": 0, "calls_inside": 0, "calls_outside": 0}
    walk(parsed.tree, False, 0, found)
    plan = parsed.emit_plan()
    in_reduction = sorted({w for r in plan["reductions"] for w in r["weights"]})
    return {
        "reductions": len(plan["reductions"]), **found,
        "weights_in_reduction": in_reduction,
        "weights_output_only": [w for w in parsed.weights if w not in in_reduction],
        # The register kernel keeps a reduction's argument for the output (template: kKeepsArgument).
        "kept": plan["output"]["kept"] is not None,
    }


def _item(ident: str, inputs: list[str], weights: list[str], text: str, origin: str) -> dict[str, object]:
    """One sweep expression as kernelgen takes it: its canonical text and what it exercises (features())."""
    from kernelgen.spec import OpSpec

    spec = OpSpec.create(ident, kind="rowwise", inputs=inputs, weights=weights or None, expr=text,
                         namespace=PACKAGE.split("-")[0])
    assert spec.parsed is not None
    return {"id": ident, "inputs": inputs, "weights": weights, "expr": spec.expr, "origin": origin, **features(spec.parsed)}


def expressions(seed: int, count: int) -> list[dict[str, object]]:
    """The fixed list, then random expressions up to ``count`` in all (seeded, reproducible); each
    canonical and accepted by kernelgen's rowwise parser."""
    from kernelgen.errors import SpecError

    rng = random.Random(seed)
    chosen: list[dict[str, object]] = []
    seen: set[object] = set()

    def add(ident: str, inputs: list[str], weights: list[str], text: str, origin: str) -> bool:
        item = _item(ident, inputs, weights, text, origin)
        if item["expr"] in seen or item["calls_inside"] + item["calls_outside"] > MAX_CALLS:  # type: ignore[operator]
            return False
        seen.add(item["expr"])
        chosen.append(item)
        return True

    for ident, inputs, weights, text in FIXED[:count]:
        add(ident, inputs.split(","), weights.split(",") if weights else [], text, "fixed")
    drawn = 0
    while len(chosen) < count:
        inputs, weights, text = _random_case(rng)
        try:
            drawn += add(f"r{drawn:02d}", inputs, weights, text, f"random (seed {seed})")
        except SpecError:  # a draw kernelgen refuses (too long once written out, ...): draw again
            continue
    return chosen


def recorded(manifests: list[Path]) -> list[dict[str, object]]:
    """The expressions of earlier sweeps' manifests (OUT/rowwise_sweep.json, or the copies kept with the
    results in docs/results), each once, in order: the sweep as measured, whatever the generator draws
    today. Their facts are computed anew: what the templates make of an expression changes with them."""
    items: dict[str, dict[str, object]] = {}
    for path in manifests:
        for op in json.loads(path.read_text())["ops"]:
            ident = str(op["id"])
            if ident not in items:
                items[ident] = _item(ident, op["inputs"], op["weights"], op["expr"], op.get("origin", str(path)))
    return list(items.values())


def generate(out: Path, seed: int, count: int, backends: tuple[str, ...] = ("cuda", "triton"),
             only: set[str] | None = None, backward: str = "vjp", manifests: list[Path] | None = None) -> Path:
    """The package OUT/rsweep-ops (every expression on every backend) and OUT/rowwise_sweep.json.
    ``backward``: the ops' backward ("vjp" by default: the sweep times the forward, and the generated
    backward's kernels would double the package's build time on the GPU machine)."""
    from kernelgen.render import generate as write_package
    from kernelgen.spec import OpSpec, PackageSpec

    drawn = recorded(manifests) if manifests else expressions(seed, count)
    if manifests:  # the draw's seed and count are the manifests' (None where they differ), not --seed's
        heads = {(head.get("seed"), head.get("count")) for head in (json.loads(p.read_text()) for p in manifests)}
        seed, count = heads.pop() if len(heads) == 1 else (None, None)  # type: ignore[assignment]
    items = [item for item in drawn if only is None or item["id"] in only]
    if not items:
        raise SystemExit(f"--only {','.join(sorted(only or ()))}: no such expression")
    ops, rows = [], []
    for item in items:
        for backend in backends:
            name = str(item["id"]) + ("_tl" if backend == "triton" else "")
            ops.append(OpSpec.create(name, kind="rowwise", backend=backend, inputs=item["inputs"],  # type: ignore[arg-type]
                                     weights=item["weights"] or None, expr=str(item["expr"]),  # type: ignore[arg-type]
                                     namespace=PACKAGE.split("-")[0], backward=backward))
            rows.append({"name": name, "backend": backend, **item})
    pkg = PackageSpec.for_new_op(ops[0], name=PACKAGE)
    for op in ops[1:]:
        pkg = pkg.with_op(op)
    out.mkdir(parents=True, exist_ok=True)
    root = write_package(pkg, out, force=False)
    (out / MANIFEST).write_text(json.dumps({"seed": seed, "count": count, "ops": rows}, indent=1) + "\n")
    return root


# ---- kernel facts -------------------------------------------------------------------------------
_DTYPE_CODES = {"f": "float32", "d": "float64", "N3c104HalfE": "float16", "N3c108BFloat16E": "bfloat16"}
_BYTES = {"float32": 4, "float64": 8, "float16": 2, "bfloat16": 2}
REGISTERS_PER_SM = 65536
MAX_THREADS_PER_SM = 2048
MAX_BLOCKS_PER_SM = 32
SHARED_PER_SM = 228 * 1024


#: A rowwise kernel's mangled name after its namespace: kg::rowwise::rows_kernel<op::Op, dtype, ...> (the
#: package's kernels, csrc/kernelgen/rowwise.cuh) or op::op_rows_kernel<dtype, ...> (template versions 4-10).
_ROW_KERNEL = re.compile(r"(long_rows|rows)_kernelI(N(\d+)(\w*?)2OpE)?(f|d|N3c104HalfE|N3c108BFloat16E)((?:Li-?\d+E)+)")


def ptxas_entries(log: str) -> list[tuple[str, dict[str, int]]]:
    """Every kernel ptxas -v reports at sm_90 in a build log: its mangled name, and its registers, spill
    bytes, stack frame and the time ptxas took for it (compile_us; 0 where the log has no such line)."""
    found: list[tuple[str, dict[str, int]]] = []
    current = None
    for line in log.splitlines():
        m = re.search(r"Compiling entry function '(\w+)' for 'sm_90a?'", line)
        if m:
            current = {"registers": 0, "spill_bytes": 0, "stack": 0, "compile_us": 0}
            found.append((m.group(1), current))
            continue
        m = re.search(r"Compile time = ([\d.]+) ms", line)
        if m and found:  # the last line of a kernel's report, after its registers
            found[-1][1]["compile_us"] = round(float(m.group(1)) * 1000)
        if current is None:
            continue
        m = re.search(r"(\d+) bytes stack frame, (\d+) bytes spill stores", line)
        if m:
            current["stack"], current["spill_bytes"] = int(m.group(1)), int(m.group(2))
        m = re.search(r"Used (\d+) registers", line)
        if m:
            current["registers"] = int(m.group(1))
            current = None
    return found


def resources(facts: dict[str, int]) -> dict[str, int]:
    """A kernel's registers, spill bytes and stack frame, from one of ptxas_entries' reports."""
    return {key: facts[key] for key in ("registers", "spill_bytes", "stack")}


def registers_from_log(log: str) -> dict[str, dict[str, dict[str, int]]]:
    """ptxas -v at sm_90: op -> kernel key -> registers, spill bytes and stack frame. Keys: "rows/<dtype>/
    <vec>/<per thread>/<fixed threads>/<block threads>" (the block is 512 in templates without it) and
    "long/<dtype>/<vec>"."""
    found: dict[str, dict[str, dict[str, int]]] = {}
    for name, facts in ptxas_entries(log):
        m = re.match(r"_ZN(\d+)(\w+)", name)
        if m is None:
            continue
        length, rest = int(m.group(1)), m.group(2)
        op = rest[:length]
        k = _ROW_KERNEL.search(rest[length:])
        if k is None:
            continue
        if k.group(4):  # the package's kernel: kg::rowwise::rows_kernel<op::(anonymous)::Op, ...>
            op = k.group(4)[:int(k.group(3))]
        params = [int(v) for v in re.findall(r"Li(-?\d+)E", k.group(6))]
        dtype = _DTYPE_CODES[k.group(5)]
        if k.group(1) == "long_rows":
            key = f"long/{dtype}/{params[0]}"
        else:
            vec, per, fixed = params[:3]
            block = params[3] if len(params) > 3 else 512
            key = f"rows/{dtype}/{vec}/{per}/{fixed}/{block}"
        found.setdefault(op, {})[key] = resources(facts)
    return found


def occupancy(registers: int, threads: int, shared: int = 0) -> float:
    """Theoretical occupancy on an H100 of blocks of ``threads`` using ``registers`` per thread (allocated
    per warp, in units of 8 per thread) and ``shared`` bytes of shared memory."""
    per_warp = -(-max(registers, 1) // 8) * 8 * 32
    warps = -(-threads // 32)
    blocks = min((REGISTERS_PER_SM // per_warp) // warps, MAX_THREADS_PER_SM // (warps * 32), MAX_BLOCKS_PER_SM)
    if shared:
        blocks = min(blocks, SHARED_PER_SM // shared)
    return blocks * warps * 32 / MAX_THREADS_PER_SM


def cuda_launch(dtype: str, cols: int, inputs: int, kept: bool, narrow: bool = False) -> dict[str, object] | None:
    """The kernel the rowwise CUDA template's launcher picks (its launch_rows and launch_register_rows,
    mirrored here to name the kernel in the ptxas log): 16-byte vectors, as the sweep's row lengths allow.
    narrow: the narrow build (the row in 16 registers), None where there is none for these rows."""
    size = _BYTES[dtype]
    vec = 16 // size
    acc = 8 if dtype == "float64" else 4

    def row_registers(per: int) -> int:
        return max(inputs * per * size // 4, per * acc // 4 if kept else 0)

    def halved(per: int, budget: int) -> int:
        while per > vec and row_registers(per) > budget:
            per //= 2
        return per

    per = halved(32, 32)
    max_cols = min(16384, per * 1024)
    if cols > max_cols:
        return None if narrow else {"kernel": f"long/{dtype}/{vec}", "threads": 512, "block": 512}
    limit = max_cols
    if size > 2 and per > 16 and cols <= 8192:
        if narrow:
            return None
        per, limit = 16, 8192
    elif narrow:
        dense = per
        per = halved(dense, 16)
        limit = min(max_cols, per * 1024)
        if per == dense or cols > limit:
            return None
    wide = per * 512 < limit
    threads = 32
    while threads < (1024 if wide else 512) and threads * per < cols:
        threads *= 2
    block = 1024 if threads == 1024 else 512
    fixed = threads if size > 2 and threads >= 512 else 0
    return {"kernel": f"rows/{dtype}/{vec}/{per}/{fixed}/{block}", "threads": threads,
            "block": threads * max(1, 128 // threads), "per_thread": per}


def cuda_facts(regs: dict[str, dict[str, int]], dtype: str, cols: int, inputs: int, kept: bool) -> dict[str, object]:
    launch = cuda_launch(dtype, cols, inputs, kept)
    assert launch is not None
    entry = regs.get(str(launch["kernel"]))
    # The launch takes the narrow build where the dense one's local memory (spills, stack) is larger, and,
    # where the narrow build takes 1024 threads a row, larger by at least 64 bytes (kWideSpillBytes).
    narrow = cuda_launch(dtype, cols, inputs, kept, narrow=True)
    narrow_entry = regs.get(str(narrow["kernel"])) if narrow else None
    if entry is not None and narrow is not None and narrow_entry is not None:
        spared = entry["stack"] - narrow_entry["stack"]
        if spared > 0 and (narrow["threads"] != 1024 or spared >= 64):
            launch, entry = narrow, narrow_entry
    if entry is None:  # a template whose launch rule differs: the widest kernel's registers at least
        candidates = {k: v for k, v in regs.items() if f"/{dtype}/" in k and k.startswith("long" if cols > 16384 else "rows")}
        if not candidates:
            return {}
        key = max(candidates, key=lambda k: (candidates[k]["spill_bytes"], candidates[k]["registers"]))
        launch, entry = {"kernel": key + " (worst of the dtype's)", "block": 512}, candidates[key]
    return {**launch, **entry, "occupancy": occupancy(entry["registers"], int(launch["block"]))}  # type: ignore[arg-type]


def triton_kernels(module) -> dict[tuple, dict[str, object]]:
    """Every kernel Triton has compiled for the @triton.jit functions of ``module``: key -> facts."""
    found = {}
    for name in dir(module):
        fn = getattr(module, name)
        caches = getattr(fn, "device_caches", None)
        if not name.endswith("_kernel") or caches is None:
            continue
        for device, entry in list(caches.items()):
            kernels = entry[0] if isinstance(entry, tuple) and isinstance(entry[0], dict) else {}
            for key, kernel in list(kernels.items()):
                try:
                    kernel._init_handles()
                    meta = kernel.metadata
                    threads = meta.num_warps * 32
                    found[(name, device, str(key))] = {
                        "kernel": name, "registers": kernel.n_regs, "spills": kernel.n_spills, "threads": threads,
                        "shared": meta.shared, "occupancy": occupancy(kernel.n_regs, threads, meta.shared)}
                except (AttributeError, RuntimeError, TypeError) as err:  # a Triton version without these fields
                    found[(name, device, str(key))] = {"kernel": name, "error": str(err)[:80]}
    return found


# ---- timing -------------------------------------------------------------------------------------
def _select(manifest: dict, only: set[str] | None, limit: int | None, backends: list[str], part: str | None = None):
    ids: list[str] = []
    for op in manifest["ops"]:
        if op["id"] not in ids and (only is None or op["id"] in only):
            ids.append(op["id"])
    if limit:
        ids = ids[:limit]
    if part:
        index, count = (int(v) for v in part.split("/"))
        ids = ids[index::count]
    groups = []
    for ident in ids:
        ops = [op for op in manifest["ops"] if op["id"] == ident and op["backend"] in backends]
        if ops:
            groups.append((ident, ops))
    return groups


def _tensors(op: dict, dtype, rows: int, cols: int, seed: int):
    import torch

    gen = torch.Generator("cuda").manual_seed(seed)
    args = [torch.empty(rows, cols, dtype=dtype, device="cuda").normal_(generator=gen) for _ in op["inputs"]]
    # Weights in [0.5, 1.5]: gains, positive, so that a weight inside a mean of squares keeps it positive.
    args += [torch.empty(cols, dtype=dtype, device="cuda").uniform_(0.5, 1.5, generator=gen) for _ in op["weights"]]
    return args


def _fits(op: dict, dtype_name: str, n: int, cols: int) -> bool:
    """Inputs, weights, two outputs and a copy's destination within 80% of the GPU's free memory."""
    import torch

    free, _ = torch.cuda.mem_get_info()
    need = (len(op["inputs"]) + 3) * n * _BYTES[dtype_name] + len(op["weights"]) * cols * _BYTES[dtype_name]
    return need < 0.8 * free


def _cells(groups, dtypes: list[str], sizes: list[int], cols_list: list[int]):
    for ident, ops in groups:
        for dtype_name in dtypes:
            for n in sizes:
                for cols in cols_list:
                    if n % cols == 0:
                        yield ident, ops, dtype_name, n, cols


def prewarm(package: Path, args) -> None:
    """Compile the references (and the Triton ops' kernels) of one part of the expressions, so that the
    timing process finds Inductor's and Triton's caches warm."""
    import importlib

    import torch

    torch._dynamo.config.cache_size_limit = 256
    torch._dynamo.config.accumulated_cache_size_limit = 4096
    manifest = json.loads((package.parent / MANIFEST).read_text())
    sys.path.insert(0, str(package))
    module = importlib.import_module(MODULE)
    groups = _select(manifest, args.only, args.limit, args.backends, args.part)
    done = 0
    for _ident, ops, dtype_name, n, cols in _cells(groups, args.dtypes, args.sizes, args.cols):
        if not _fits(ops[0], dtype_name, n, cols):
            continue
        tensors = _tensors(ops[0], getattr(torch, dtype_name), n // cols, cols, n)
        reference = importlib.import_module(f"{MODULE}.ops.{ops[0]['name']}").reference
        torch.compile(reference, dynamic=False)(*tensors)
        for op in ops:
            if op["backend"] == "triton":
                getattr(module, op["name"])(*tensors)
        done += 1
        del tensors
        torch.cuda.synchronize()
        torch.cuda.empty_cache()
    print(f"prewarmed part {args.part}: {done} cells", flush=True)


def run(package: Path, args) -> None:
    import importlib

    import torch
    from triton.testing import do_bench

    torch._dynamo.config.cache_size_limit = 256
    torch._dynamo.config.accumulated_cache_size_limit = 4096
    manifest = json.loads((package.parent / MANIFEST).read_text())
    sys.path.insert(0, str(package))
    module = importlib.import_module(MODULE)
    regs = registers_from_log(Path(args.build_log).read_text()) if args.build_log else {}
    groups = _select(manifest, args.only, args.limit, args.backends)
    cells = list(_cells(groups, args.dtypes, args.sizes, args.cols))
    timed = sum(len(ops) for _, ops, *_ in cells)
    per_bench = 0.1  # seconds: do_bench's warmup and 60 ms of repetitions, L2 flushes included
    print(f"{len(groups)} expressions, {timed} timed cells, {len(cells)} torch.compile references; about "
          f"{(timed + len(cells)) * args.rounds * per_bench / 60:.1f} min of timing, plus compiling (about 1 s a "
          f"reference from a warm cache, 5-20 s cold)", flush=True)
    results: list[dict[str, object]] = []
    copies: dict[tuple[str, int], float] = {}
    compiled: dict[str, object] = {}
    # A Triton op's kernel facts per dtype and kernel (rows of 65536 and 262144 share the chunked one,
    # compiled by the first of them): a cell that compiles nothing new reuses them.
    tl_facts: dict[tuple[str, str, object], dict] = {}
    started = time.time()

    def bench(fn) -> float:
        return do_bench(fn, warmup=10, rep=60, return_mode="median")

    for ident, ops, dtype_name, n, cols in cells:
        if not _fits(ops[0], dtype_name, n, cols):
            print(f"{ident} {dtype_name} {n // cols}x{cols}: skipped, does not fit in GPU memory", flush=True)
            continue
        dtype = getattr(torch, dtype_name)
        rows = n // cols
        tensors = _tensors(ops[0], dtype, rows, cols, n)
        if ident not in compiled:
            reference = importlib.import_module(f"{MODULE}.ops.{ops[0]['name']}").reference
            compiled[ident] = torch.compile(reference, dynamic=False)
        theirs_fn = compiled[ident]
        t = time.time()
        expected = theirs_fn(*tensors)  # compile (from the prewarmed caches) before timing
        compile_s = time.time() - t
        if (dtype_name, n) not in copies:
            dst = torch.empty_like(tensors[0])
            copies[(dtype_name, n)] = bench(lambda dst=dst, src=tensors[0]: dst.copy_(src))
            del dst
        fns = {op["name"]: getattr(module, op["name"]) for op in ops}
        before = {name: set(triton_kernels(importlib.import_module(f"{MODULE}.ops.{name}")))
                  for name, op in zip(fns, ops, strict=True) if op["backend"] == "triton"}
        checks = {}
        for name, fn in fns.items():
            got = fn(*tensors)  # Triton compiles here, outside the timing
            # Not a test (the package's suites are): whether the output is finite, and how far it is from
            # compile's, so that a timing of a wrong or overflowing result shows as such.
            checks[name] = {"finite": bool(torch.isfinite(got).all()),
                            "max_abs_diff": float((got.float() - expected.float()).abs().nan_to_num(float("inf")).max())}
            del got
        del expected
        # Interleaved rounds, each side keeping its fastest round's median: a clock or host hiccup
        # during one measurement does not decide a ratio, and every side gets the same chances.
        mine: dict[str, list[float]] = {name: [] for name in fns}
        theirs_rounds: list[float] = []
        for _ in range(args.rounds):
            for name, fn in fns.items():
                mine[name].append(bench(lambda fn=fn, args=tensors: fn(*args)))
            theirs_rounds.append(bench(lambda fn=theirs_fn, args=tensors: fn(*args)))
        theirs = min(theirs_rounds)
        size = _BYTES[dtype_name]
        moved = (len(ops[0]["inputs"]) + 1) * n * size + len(ops[0]["weights"]) * cols * size
        copy_rate = 2 * n * size / copies[(dtype_name, n)]
        for op in ops:
            ours = min(mine[op["name"]])
            if op["backend"] == "cuda":
                facts = cuda_facts(regs.get(op["name"], {}), dtype_name, cols, len(op["inputs"]), bool(op["kept"]))
            else:
                ran = triton_kernels(importlib.import_module(f"{MODULE}.ops.{op['name']}"))
                new = [v for k, v in ran.items() if k not in before.get(op["name"], set())]
                which = (op["name"], dtype_name, "long" if cols > 16384 else cols)
                if new:
                    tl_facts[which] = new[0] if len(new) == 1 else {"kernels": new}
                facts = tl_facts.get(which, {})
            row = {
                "id": ident, "op": op["name"], "backend": op["backend"], "expr": op["expr"],
                "inputs": len(op["inputs"]), "weights": len(op["weights"]), "reductions": op["reductions"],
                "dtype": dtype_name, "n": n, "rows": rows, "cols": cols,
                "us": ours * 1e3, "compile_us": theirs * 1e3, "vs_compile": theirs / ours,
                "rounds_us": [v * 1e3 for v in mine[op["name"]]], "compile_rounds_us": [v * 1e3 for v in theirs_rounds],
                "pct_of_copy": 100 * (moved / ours) / copy_rate, "compile_pct_of_copy": 100 * (moved / theirs) / copy_rate,
                "compile_first_call_s": round(compile_s, 2), **checks[op["name"]], **facts,
            }
            results.append(row)
            print(f"{op['name']} {dtype_name} {rows}x{cols}: {row['vs_compile']:.2f}x compile, "
                  f"{row['pct_of_copy']:.0f}% of copy (compile {row['compile_pct_of_copy']:.0f}%), "
                  f"{_facts_text(row)}" + ("" if row["finite"] else ", NOT FINITE"), flush=True)
        del tensors
        torch.cuda.empty_cache()
        if args.json:
            Path(args.json).write_text(json.dumps({"seed": manifest["seed"], "rows": results}, indent=1))
    print(f"timed in {time.time() - started:.0f} s", flush=True)
    summarize(results)


def _facts_text(row: dict) -> str:
    if "registers" not in row:
        return "registers ?"
    spills = row.get("spill_bytes", row.get("spills", 0))
    text = f"{row['registers']} regs, {spills} B spilled"
    if "occupancy" in row:
        text += f", occupancy {row['occupancy']:.0%}"
    if "kernel" in row:
        text += f" ({row['kernel']}" + (f", {row['threads']} threads" if "threads" in row else "") + ")"
    return text


def summarize(results: list[dict]) -> None:
    """The distribution per backend, dtype and row length, then the issue's targets per backend (rows of
    1024-16384: every cell >= 0.95x of compile, median >= 1.0x) and the ten worst cells. A cell whose
    output was not finite is listed, and left out: its time is not the op's."""
    broken: dict[tuple[str, str], list[str]] = {}
    for r in results:
        if r.get("finite") is False:
            broken.setdefault((r["op"], r["backend"]), []).append(f"{r['dtype']}/{r['cols']}")
    for (op, backend), cells in sorted(broken.items()):
        print(f"not finite, left out: {op} {backend}: {len(cells)} cells ({', '.join(sorted(set(c.split('/')[0] for c in cells)))})")
    results = [r for r in results if r.get("finite") is not False]
    print("backend  dtype     cols    cells  min    median  >=0.95x  median % of copy")
    keys = sorted({(r["backend"], r["dtype"], r["cols"]) for r in results})
    for backend, dtype, cols in keys:
        mine = [r for r in results if (r["backend"], r["dtype"], r["cols"]) == (backend, dtype, cols)]
        ratios = [r["vs_compile"] for r in mine]
        good = sum(v >= 0.95 for v in ratios)
        print(f"{backend:8s} {dtype:9s} {cols:7d} {len(ratios):5d}  {min(ratios):.2f}x  {statistics.median(ratios):.2f}x  "
              f"{good:3d}/{len(ratios):<3d}  {statistics.median(r['pct_of_copy'] for r in mine):.0f}%")
    for backend in sorted({r["backend"] for r in results}):
        short = [r["vs_compile"] for r in results if r["backend"] == backend and r["cols"] <= 16384]
        if short:
            print(f"{backend}, rows of 1024-16384: {sum(v >= 0.95 for v in short)}/{len(short)} cells >= 0.95x, "
                  f"median {statistics.median(short):.2f}x")
    long_rows = [r for r in results if r["cols"] >= 65536 and r["reductions"] == 1]
    if long_rows:
        at = sum(r["pct_of_copy"] >= 85 for r in long_rows)
        print(f"rows of 65536+, one reduction: {at}/{len(long_rows)} cells at >= 85% of copy")
    print("ten worst:")
    for r in sorted(results, key=lambda r: r["vs_compile"])[:10]:
        both = " [both below 90% of copy]" if r["pct_of_copy"] < 90 and r["compile_pct_of_copy"] < 90 else ""
        print(f"  {r['vs_compile']:.2f}x {r['pct_of_copy']:.0f}% (compile {r['compile_pct_of_copy']:.0f}%) {r['backend']} "
              f"{r['dtype']} {r['rows']}x{r['cols']}: {_facts_text(r)}{both}: {r['op']} = {r['expr']}")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    g = sub.add_parser("generate", help="write the package and its manifest (dev machine)")
    g.add_argument("out", type=Path)
    g.add_argument("--seed", type=int, default=28)
    g.add_argument("--count", type=int, default=40, help="expressions in all, the fixed ones first")
    g.add_argument("--backends", default="cuda,triton")
    g.add_argument("--only", default="", help="only these expressions, comma-separated ids (resrms,r03)")
    g.add_argument("--manifest", action="append", type=Path, default=[],
                   help="take the expressions from an earlier sweep's rowwise_sweep.json (repeatable) instead of drawing them")
    g.add_argument("--backward", default="vjp", choices=("vjp", "fused"),
                   help="the ops' backward (vjp: the sweep times the forward; fused builds the backward kernels too)")

    def subset(p: argparse.ArgumentParser) -> None:
        p.add_argument("package", type=Path)
        p.add_argument("--sizes", default=str(2**26), help="elements per input, comma-separated")
        p.add_argument("--cols", default="1024,4096,16384,65536,262144", help="row lengths")
        p.add_argument("--dtypes", default="float32,float16,bfloat16")
        p.add_argument("--backends", default="cuda,triton")
        p.add_argument("--only", default="", help="only these expression ids, comma-separated")
        p.add_argument("--limit", type=int, default=0, help="only the first N expressions (after --only)")

    r = sub.add_parser("run", help="time the built package (GPU)")
    subset(r)
    r.add_argument("--rounds", type=int, default=3, help="interleaved rounds; each side keeps its fastest median")
    r.add_argument("--json")
    r.add_argument("--build-log", help="the package's build log with ptxas -v output")
    w = sub.add_parser("prewarm", help="fill the compile caches for one part of the expressions (GPU)")
    subset(w)
    w.add_argument("--part", default="0/1", help="INDEX/COUNT: every COUNT-th expression from INDEX")
    s = sub.add_parser("summary", help="the distribution and the worst cells again, from JSON files")
    s.add_argument("json", nargs="+")
    args = parser.parse_args(argv)
    if args.command == "generate":
        backends = tuple(b for b in args.backends.split(",") if b)
        bad = [b for b in backends if b not in ("cuda", "triton")]
        if bad or not backends:
            parser.error(f"--backends: {','.join(bad) or '(none)'}: choose from cuda, triton")
        only = set(args.only.split(",")) if args.only else None
        print(f"wrote {generate(args.out, args.seed, args.count, backends, only, args.backward, args.manifest)}")
        return
    if args.command == "summary":
        summarize([row for path in args.json for row in json.loads(Path(path).read_text())["rows"]])
        return
    args.sizes = [int(v) for v in args.sizes.split(",")]
    args.cols = [int(v) for v in args.cols.split(",")]
    args.dtypes = args.dtypes.split(",")
    args.backends = args.backends.split(",")
    args.only = set(args.only.split(",")) if args.only else None
    (prewarm if args.command == "prewarm" else run)(args.package, args)


if __name__ == "__main__":
    main()
