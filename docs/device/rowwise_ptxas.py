"""ptxas and SASS facts of rowwise CUDA kernels, on the dev machine (no GPU): registers, spills, stack
frame, local-memory instructions, conversions and load widths per kernel (docs/rowwise_diagnosis.md).

    python docs/device/rowwise_ptxas.py OUT [--ops resrms,rmsnorm] [--kernelgen SRC]

Generates each op with kernelgen (from SRC's templates when given: a checkout of another commit, e.g.
`git archive HEAD~1 | tar -x -C /tmp/old`), compiles its kernel file for sm_90 with the package's own
nvcc flags plus `-cubin -Xptxas -v --resource-usage`, disassembles the cubin with cuobjdump (the one
Triton ships, when the toolkit has none) and prints one line per register-row kernel (the forward's, and the
backward's grad_ ones where the op has a fused backward): template
arguments (dtype, kVec, elements per thread, fixed threads[, block threads]), registers, stack frame,
spill stores/loads, then SASS counts: all instructions, LDL/STL (local memory: spills), LDG/STG widths,
PRMT (byte permutes), IMAD.U32/SHF (bfloat16 widening), HADD2.F32 (float16 widening), F2F/F2FP, the
min/max instructions (FMNMX) and the compare-and-selects (FSETP, FSEL), MUFU (the special-function unit) and
BRA, and the instructions an element (all of them over the elements a thread holds).

    python docs/device/rowwise_ptxas.py OUT --seed 64 --ops r00,r10 [--summary]

takes the ops from the rowwise sweep's draw of that seed (docs/device/rowwise_sweep.py) instead of OPS, and
--summary adds, per dtype, the median and the highest instructions an element over the ops' register builds.
A 2-byte kernel above about 30 an element is bound by the instructions it issues on an H200, not by memory
(docs/design.md, lesson 42). The count is static: code a branch skips (the slow path of sinf for large
arguments) counts as much as code every element runs, so ops with BRA in the hundreds read high.
"""

from __future__ import annotations

import argparse
import collections
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

OPS = {
    "resrms": ("x,res", "w", "(x + res) * rsqrt(mean((x + res) * (x + res)) + 1e-6) * w"),
    "rmsnorm": ("x", "w", "x * rsqrt(mean(x * x) + 1e-6) * w"),
    "softmax": ("x", "", "exp(x - max(x)) / sum(exp(x - max(x)))"),
    "log_softmax": ("x", "", "x - max(x) - log(sum(exp(x - max(x))))"),
    "layernorm": ("x", "w,b", "(x - mean(x)) * rsqrt(mean((x - mean(x)) ** 2) + 1e-5) * w + b"),
    "csilu": ("x", "", "x * sigmoid(x) - mean(x * sigmoid(x))"),
    "wrms": ("x", "w", "x * rsqrt(mean(x * x * w) + 1e-6)"),
    "quad4": ("a,c,d,e", "w", "(a * c + d - e) * rsqrt(mean((a * c + d - e) ** 2) + 1e-6) * w"),
}
_DTYPES = {"f": "float32", "d": "float64", "N3c104HalfE": "float16", "N3c108BFloat16E": "bfloat16"}
#: kg::rowwise::rows_kernel<op::Op, dtype, ...> (csrc/kernelgen/rowwise.cuh), its cluster_ and long_ kin and the
#: backward's grad_ ones (op::GradOp), or, before template version 11, op::op_rows_kernel<dtype, ...>.
_KERNEL = re.compile(r"((?:grad_)?(?:cluster_)?(?:long_rows|rows))_kernelI(?:N\d+\w*?(?:2Op|6GradOp)E)?"
                     r"(f|d|N3c104HalfE|N3c108BFloat16E)((?:Li-?\d+E)+)")
_COUNTED = ("LDL", "STL", "LDG", "STG", "PRMT", "IMAD.U32", "SHF", "LOP3", "HADD2.F32", "F2F", "F2FP", "FMNMX", "FSETP",
            "FSEL", "MUFU", "BRA")


def _kernel_name(mangled: str) -> str | None:
    m = _KERNEL.search(mangled)
    if not m:
        return None
    args = "/".join(re.findall(r"Li(-?\d+)E", m.group(3)))
    return f"{m.group(1)}<{_DTYPES[m.group(2)]}/{args}>"


def ptxas_facts(log: str) -> dict[str, dict[str, int]]:
    facts: dict[str, dict[str, int]] = {}
    name = None
    for line in log.splitlines():
        m = re.search(r"Compiling entry function '(\w+)'", line)
        if m:
            name = _kernel_name(m.group(1))
            continue
        m = re.search(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads", line)
        if m and name:
            facts[name] = {"stack": int(m.group(1)), "spill_st": int(m.group(2)), "spill_ld": int(m.group(3))}
        m = re.search(r"Used (\d+) registers", line)
        if m and name:
            facts.setdefault(name, {})["registers"] = int(m.group(1))
            name = None
    return facts


def sass_counts(sass: str) -> dict[str, collections.Counter]:
    counts: dict[str, collections.Counter] = {}
    current = None
    for line in sass.splitlines():
        m = re.match(r"\s+Function : (\w+)", line)
        if m:
            name = _kernel_name(m.group(1))
            current = counts.setdefault(name, collections.Counter()) if name else None
            continue
        m = re.search(r"/\*[0-9a-f]{4,}\*/\s+(?:@!?U?P\w+\s+)?([A-Z][A-Z0-9_.]+)", line)
        if m and current is not None:
            op = m.group(1)
            current["ALL"] += 1
            for key in _COUNTED:
                if op == key or op.startswith(key + "."):
                    # loads and stores keep their width suffix (LDG.E.128, STL.S16); the rest by family
                    current[op if key in ("LDL", "STL", "LDG", "STG") else key] += 1
    return counts


def _tool(name: str) -> str:
    found = shutil.which(name) or (Path(os.environ.get("CUDA_HOME", "/usr/local/cuda")) / "bin" / name)
    if Path(found).exists():
        return str(found)
    import triton

    return str(Path(triton.__file__).parent / "backends" / "nvidia" / "bin" / name)


def drawn(seed: int) -> dict[str, tuple[str, str, str]]:
    """The rowwise sweep's expressions of `seed` (its fixed ones and its first 64 random ones), as OPS has them."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("rowwise_sweep", Path(__file__).with_name("rowwise_sweep.py"))
    assert spec is not None and spec.loader is not None
    sweep = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(sweep)
    return {e["id"]: (",".join(e["inputs"]), ",".join(e["weights"]), e["expr"]) for e in sweep.expressions(seed, 64)}


def compile_op(out: Path, op: str, kernelgen_src: str | None, spec: tuple[str, str, str] | None = None,
               backward: str = "fused") -> tuple[str, str]:
    inputs, weights, expr = spec or OPS[op]
    env = dict(os.environ, PYTHONPATH=kernelgen_src or os.environ.get("PYTHONPATH", ""))
    root = out / op
    if not root.exists():
        command = [sys.executable, "-m", "kernelgen", "new", op, "--kind", "rowwise", "--inputs", inputs,
                   "--expr", expr, "--backward", backward, "--defaults", "--output", str(out)] + (
                       ["--weights", weights] if weights else [])
        subprocess.run(command, env=env, cwd=out, check=True, capture_output=True)
    import importlib.util

    import torch.utils.cpp_extension as cpp

    spec = importlib.util.spec_from_file_location(f"_build_{op}", root / op / "_build.py")
    assert spec is not None and spec.loader is not None
    build = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(build)
    _, nvcc_flags = build.compile_flags(True)
    kernel = root / op / "csrc" / op / "cuda" / f"{op}_kernel.cu"
    cubin = out / f"{op}.cubin"
    result = subprocess.run(
        [_tool("nvcc"), "-std=c++17", *cpp.COMMON_NVCC_FLAGS, *nvcc_flags, *[f"-I{p}" for p in cpp.include_paths()],
         "-arch=sm_90", "-cubin", "-Xptxas", "-v", "--resource-usage", str(kernel), "-o", str(cubin)],
        capture_output=True, text=True, check=True)
    sass = subprocess.run([_tool("cuobjdump"), "-sass", str(cubin)], capture_output=True, text=True, check=True).stdout
    (out / f"{op}_ptxas.log").write_text(result.stdout + result.stderr)
    (out / f"{op}.sass").write_text(sass)
    return result.stdout + result.stderr, sass


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--ops", default="resrms,rmsnorm")
    parser.add_argument("--kernelgen", help="a kernelgen source tree to generate with (default: PYTHONPATH's)")
    parser.add_argument("--all", action="store_true", help="also the long-row kernels and kVec 1 (misaligned rows)")
    parser.add_argument("--seed", type=int, help="the ops are ids of the rowwise sweep's draw of this seed")
    parser.add_argument("--backward", default="fused", choices=["fused", "vjp"],
                        help="the ops' backward (vjp: only the forward's kernels, compiled sooner)")
    parser.add_argument("--summary", action="store_true", help="the instructions an element per dtype, at the end")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    specs = drawn(args.seed) if args.seed is not None else OPS
    per_element: dict[str, list[tuple[float, str]]] = {}
    for op in args.ops.split(","):
        log, sass = compile_op(args.out, op, args.kernelgen, specs[op], args.backward)
        facts, counts = ptxas_facts(log), sass_counts(sass)
        print(f"== {op}: {specs[op][2]}")
        for name in sorted(facts):
            vec = name[name.index("<") + 1:-1].split("/")[1]
            if not args.all and ("long" in name or vec == "1"):
                continue
            f, c = facts[name], counts.get(name, collections.Counter())
            local = " ".join(f"{k} {v}" for k, v in sorted(c.items()) if k.startswith(("LDL", "STL"))) or "none"
            widths = " ".join(f"{k} {v}" for k, v in sorted(c.items()) if k.startswith(("LDG", "STG")))
            other = " ".join(f"{k} {c[k]}" for k in _COUNTED[4:] if c[k])
            each = c["ALL"] / int(name[name.index("<") + 1:-1].split("/")[2])
            if "long" not in name:
                per_element.setdefault(name[name.index("<") + 1:].split("/")[0], []).append((each, op))
            print(f"  {name:38s} {f.get('registers', '?'):>3} regs  stack {f.get('stack', 0):>4}  spill "
                  f"{f.get('spill_st', 0)}/{f.get('spill_ld', 0)}  SASS {c['ALL']:>5} ({each:.1f} an element)  local: {local}"
                  f"  | {widths} | {other}")
    if args.summary:
        for dtype, values in sorted(per_element.items()):
            values.sort()
            print(f"{dtype}: {len(values)} register builds, instructions an element median {values[len(values) // 2][0]:.1f},"
                  f" highest {values[-1][0]:.1f} ({values[-1][1]})")


if __name__ == "__main__":
    main()
