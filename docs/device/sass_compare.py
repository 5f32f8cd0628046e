"""Do two template trees compile an op to the same machine code? On the dev machine (no GPU).

    python docs/device/sass_compare.py dump OUT [--kernelgen SRC] [--ops muladd,gelu,...] [--abi full] [--sm90]
    python docs/device/sass_compare.py compare OUT_A OUT_B

`dump` generates each op of OPS with kernelgen (from SRC's templates when given: a checkout of another
commit, `git archive REV | tar -x -C /tmp/old`), compiles every `.cu` of the op for sm_90 with the
package's own nvcc flags (`-cubin`), disassembles it with cuobjdump (the one Triton ships, when the
toolkit has none) and writes, per op, each kernel's SASS keyed by its template arguments
(dtype, elements per access, packs per thread, blocks per SM), with addresses stripped.

`compare` says, for each op and kernel, whether the two dumps hold the same instructions. Equal SASS
runs at equal speed, so a refactoring of the templates that keeps it equal needs no new GPU timing.
Constant-bank offsets of kernel parameters (`c[0x0][0x...]`) are compared too: a reordered parameter
list shows up as a difference.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

#: name -> the options of `kernelgen new`: every launch path of the elementwise kernel, the matmul
#: kernels with and without a bias, a light and a heavy epilogue, with and without the half types, and
#: the rowwise kernels' paths (below).
OPS = {
    "muladd": ["--inputs", "a,b,c", "--expr", "a*b+c"],  # light, 3 inputs: 2 packs max
    "gelu": ["--inputs", "x", "--expr", "x * sigmoid(1.702 * x)"],  # 1 input, 16-byte float32
    "silu_mul": ["--inputs", "x,y", "--expr", "x*sigmoid(x)*y"],  # 2 inputs, 8-byte float32
    "powmix": ["--inputs", "x,y", "--expr", "pow(abs(x) + 1, y * 0.5)", "--dtypes", "float32,float16"],  # heavier math
    "tanh6": ["--inputs", "x", "--expr", "tanh(tanh(tanh(tanh(tanh(tanh(x))))))", "--dtypes", "float64,float32"],
    "wide8": ["--inputs", "a,b,c,d,e2,g,h,k", "--expr", "a*b + c*d - e2*g + h*k", "--dtypes", "bfloat16,float16"],
    "mm": ["--kind", "matmul"],  # no bias, the identity epilogue
    "mmgelu": ["--kind", "matmul", "--bias", "--epilogue", "(acc + bias) * sigmoid(1.702 * (acc + bias))"],
    "mmrelu": ["--kind", "matmul", "--epilogue", "max(acc, 0) ** 2", "--dtypes", "float32,float64"],  # no tensor cores
    # rowwise: the kept argument (softmax), weights only in the output (layernorm), a weight inside a
    # reduction, two inputs (the register estimate halves the elements per thread), an output that
    # reads no input (lse), three reductions.
    "rwsoftmax": ["--kind", "rowwise", "--inputs", "x", "--expr", "exp(x - max(x)) / sum(exp(x - max(x)))"],
    "rwln": ["--kind", "rowwise", "--inputs", "x", "--weights", "w,b",
             "--expr", "(x - mean(x)) * rsqrt(mean((x - mean(x)) ** 2) + 1e-5) * w + b"],
    "rwresrms": ["--kind", "rowwise", "--inputs", "x,res", "--weights", "w",
                 "--expr", "(x + res) * rsqrt(mean((x + res) * (x + res)) + 1e-6) * w"],
    "rwwin": ["--kind", "rowwise", "--inputs", "x", "--weights", "w", "--expr", "x / sum(abs(x * w) + 1)",
              "--dtypes", "float32,bfloat16"],
    "rwlse": ["--kind", "rowwise", "--inputs", "x", "--expr", "log(sum(exp(x - max(x)))) + max(x)",
              "--dtypes", "float32,float16"],
    "rwquad": ["--kind", "rowwise", "--inputs", "a,c,d,e", "--weights", "w",
               "--expr", "(a * c + d - e) * rsqrt(mean((a * c + d - e) ** 2) + 1e-6) * w + min(a)",
               "--dtypes", "float32,bfloat16"],
}
_DTYPES = {"float": "float32", "double": "float64", "Half": "float16", "BFloat16": "bfloat16"}


def _tool(name: str) -> str:
    found = shutil.which(name) or str(Path(os.environ.get("CUDA_HOME", "/usr/local/cuda")) / "bin" / name)
    if Path(found).exists():
        return found
    import triton

    return str(Path(triton.__file__).parent / "backends" / "nvidia" / "bin" / name)


def _key(demangled: str, op: str) -> str:
    """A kernel's name and template arguments, from its demangled name: the kernel's own name (an op's
    `<op>_kernel` counts as `kernel`), the dtype and what follows it (numbers and booleans), so that
    the same kernel keeps its key when it moves from an op's file to a package header."""
    name = re.sub(r"<.*", "", demangled).split("::")[-1]
    name = name.removeprefix(f"{op}_") if name in (f"{op}_kernel", f"{op}_rows_kernel", f"{op}_long_rows_kernel") else name
    args = demangled[demangled.index("<") + 1:demangled.rindex(">")] if "<" in demangled else ""
    found = [(m.start(), v) for k, v in _DTYPES.items() for m in re.finditer(rf"(?<![\w:]){k}\b|::{k}\b", args)]
    if not found:
        return name
    start, dtype = min(found)
    after = re.findall(r"(?<![\w.])(-?\d+|true|false)(?![\w.])", args[start:])
    return f"{name}<{dtype}/" + "/".join(after[:4]) + ">"


def _functions(sass: str, op: str) -> dict[str, list[str]]:
    names = re.findall(r"^\s+Function : (\S+)", sass, re.MULTILINE)
    demangled = subprocess.run(["c++filt"], input="\n".join(names), capture_output=True, text=True,
                               check=True).stdout.splitlines()
    lookup = dict(zip(names, demangled, strict=True))
    functions: dict[str, list[str]] = {}
    current: list[str] | None = None
    for line in sass.splitlines():
        m = re.match(r"\s+Function : (\S+)", line)
        if m:
            current = functions.setdefault(_key(lookup[m.group(1)], op), [])
            continue
        m = re.search(r"/\*[0-9a-f]{4,}\*/\s+(.*?)\s*;", line)
        if m and current is not None:
            current.append(re.sub(r"\s+", " ", m.group(1)))
    return functions


def dump(out: Path, ops: list[str], kernelgen_src: str | None, abi: str = "stable", sm90: bool = False) -> None:
    import importlib.util

    import torch.utils.cpp_extension as cpp

    out.mkdir(parents=True, exist_ok=True)
    # Read by `kernelgen new` and by the packages' _build.compile_flags alike: with --sm90 the CUTLASS
    # sources only, built for sm_90a with the headers the package's build finds; else none of them.
    os.environ["TORCH_CUDA_ARCH_LIST"] = "9.0"
    if sm90:
        os.environ.pop("KERNELGEN_NO_CUTLASS", None)
    else:
        os.environ["KERNELGEN_NO_CUTLASS"] = "1"
    env = dict(os.environ, PYTHONPATH=kernelgen_src or os.environ.get("PYTHONPATH", ""))
    for op in ops:
        if sm90 and ("matmul" not in OPS[op] or abi == "full"):
            continue
        if abi == "full" and {"--bias", "--epilogue"} & set(OPS[op]):
            print(f"{op}: left out (kernelgen generates --bias and --epilogue on the stable ABI only)")
            continue
        root = out / "src" / op
        if root.exists():
            shutil.rmtree(root)
        root.parent.mkdir(parents=True, exist_ok=True)
        subprocess.run([sys.executable, "-m", "kernelgen", "new", op, *OPS[op], "--arch-list", "9.0", "--abi", abi,
                        "--defaults", "--output", str(root.parent)], env=env, cwd=out, check=True, capture_output=True)
        spec = importlib.util.spec_from_file_location(f"_build_{op}", root / op / "_build.py")
        assert spec is not None and spec.loader is not None
        build = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(build)
        _, nvcc_flags = build.compile_flags(True) if abi == "stable" else build.compile_flags()
        functions: dict[str, list[str]] = {}
        # The CUTLASS (sm_90a) sources with --sm90, the others without.
        flags = [f for f in nvcc_flags if not f.startswith(("-gencode", "--threads", "--split-compile"))]
        for source in sorted(p for p in (root / op / "csrc").rglob("*.cu") if p.name.endswith("_sm90.cu") == sm90):
            cubin = out / f"{op}_{source.stem}.cubin"
            subprocess.run([_tool("nvcc"), "-std=c++17", *cpp.COMMON_NVCC_FLAGS, *flags,
                            *[f"-I{p}" for p in cpp.include_paths()], "-arch=sm_90a" if sm90 else "-arch=sm_90",
                            "-cubin", str(source), "-o", str(cubin)], capture_output=True, text=True, check=True)
            sass = subprocess.run([_tool("cuobjdump"), "-sass", str(cubin)], capture_output=True, text=True,
                                  check=True).stdout
            functions.update(_functions(sass, op))
        (out / f"{op}.json").write_text(json.dumps(functions, indent=0, sort_keys=True) + "\n")
        print(f"{op}: {len(functions)} kernels, {sum(map(len, functions.values()))} instructions", flush=True)


def compare(a: Path, b: Path) -> int:
    differ = 0
    for path in sorted(a.glob("*.json")):
        other = b / path.name
        if not other.exists():
            print(f"{path.stem}: missing in {b}")
            differ += 1
            continue
        left, right = json.loads(path.read_text()), json.loads(other.read_text())
        if set(left) != set(right):  # names that do not map (CUTLASS's): the kernels' bodies, as a multiset
            same = sorted(map(tuple, left.values())) == sorted(map(tuple, right.values()))
            print(f"{path.stem}: {len(left)} and {len(right)} kernels, {'the same bodies' if same else 'DIFFERENT bodies'}")
            differ += 0 if same else 1
            continue
        for key in sorted(set(left) | set(right)):
            if left.get(key) == right.get(key):
                print(f"{path.stem} {key}: same ({len(left[key])} instructions)")
            else:
                differ += 1
                la, lb = left.get(key, []), right.get(key, [])
                first = next((i for i, (x, y) in enumerate(zip(la, lb, strict=False)) if x != y), min(len(la), len(lb)))
                print(f"{path.stem} {key}: DIFFERENT ({len(la)} vs {len(lb)} instructions; first at {first}: "
                      f"{la[first] if first < len(la) else '-'} | {lb[first] if first < len(lb) else '-'})")
    print(f"{differ} kernels differ")
    return differ


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    d = sub.add_parser("dump")
    d.add_argument("out", type=Path)
    d.add_argument("--kernelgen", help="a kernelgen source tree to generate with (default: PYTHONPATH's)")
    d.add_argument("--ops", default=",".join(OPS))
    d.add_argument("--abi", default="stable", choices=["stable", "full"])
    d.add_argument("--sm90", action="store_true", help="the matmul ops' CUTLASS sources (sm_90a) instead of the others")
    c = sub.add_parser("compare")
    c.add_argument("a", type=Path)
    c.add_argument("b", type=Path)
    args = parser.parse_args()
    if args.command == "dump":
        dump(args.out, args.ops.split(","), args.kernelgen, args.abi, args.sm90)
    else:
        sys.exit(1 if compare(args.a, args.b) else 0)


if __name__ == "__main__":
    main()
