"""Does nvcc's --split-compile change the code of the CUTLASS kernels? (stop 21)

    TORCH_CUDA_ARCH_LIST=9.0 python3 docs/device/sass_split_check.py examples/matmul/matmul

Compiles <package>/csrc/<op>/cuda/*_sm90.cu to an sm_90a cubin twice, with the package's own nvcc flags
with and without --split-compile, disassembles both (cuobjdump) and compares the instructions of every
kernel, addresses stripped. Prints one line per kernel and a verdict.
"""

from __future__ import annotations

import importlib.util
import re
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from torch.utils.cpp_extension import include_paths


def kernels(cubin: Path) -> dict[str, list[str]]:
    out = subprocess.run(["cuobjdump", "-sass", str(cubin)], check=True, capture_output=True, text=True).stdout
    found: dict[str, list[str]] = {}
    name = None
    for line in out.splitlines():
        match = re.match(r"\s*Function : (\S+)", line)
        if match:
            # Anonymous namespaces mangle with a per-compilation id: strip it to pair the kernels.
            name = re.sub(r"\d+_GLOBAL__N__[0-9a-f]+_\d+_\w+?_[0-9a-f]{8}(?=[0-9A-Z])", "ANON", match.group(1))
            found[name] = []
        elif name and re.match(r"\s+/\*[0-9a-f]{4,}\*/", line):
            found[name].append(re.sub(r"/\*[0-9a-f]+\*/", "", line.split(";")[0]).strip())
    return found


def main(package_dir: str) -> None:
    package = Path(package_dir).resolve()
    spec = importlib.util.spec_from_file_location("kg_build", package / "_build.py")
    build = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(build)
    _, nvcc = build.compile_flags(True)
    base = [f for f in nvcc if not f.startswith("--split-compile")]
    base = [f for f in base if not f.startswith("-gencode")] + ["-gencode=arch=compute_90a,code=sm_90a", "-std=c++17"]
    base += [f"-I{p}" for p in include_paths(device_type="cuda")]
    source = next((package / "csrc").rglob("*_sm90.cu"))
    tmp = Path(tempfile.mkdtemp())
    variants = {"plain": base, "split": [*base, "--split-compile=0"]}

    def compile_one(item):
        label, flags = item
        subprocess.run(["nvcc", *flags, "-cubin", str(source), "-o", str(tmp / f"{label}.cubin")], check=True)
        return label

    with ThreadPoolExecutor(2) as pool:
        list(pool.map(compile_one, variants.items()))
    plain, split = kernels(tmp / "plain.cubin"), kernels(tmp / "split.cubin")
    same = True
    for name in sorted(set(plain) | set(split)):
        a, b = plain.get(name, []), split.get(name, [])
        equal = a == b
        same &= equal
        print(f"{'same' if equal else 'DIFFERENT'}: {len(a)} / {len(b)} instructions  {name[:90]}")
    print(f"{source.name}: {len(plain)} kernels; --split-compile leaves the SASS {'identical' if same else 'CHANGED'}")


if __name__ == "__main__":
    main(sys.argv[1])
