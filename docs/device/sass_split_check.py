"""Does nvcc's --split-compile change the code of the CUTLASS kernels? (stop 21)

    TORCH_CUDA_ARCH_LIST=9.0 python3 docs/device/sass_split_check.py examples/matmul/matmul

Compiles <package>/csrc/<op>/cuda/*_sm90.cu to an sm_90a cubin twice, with the package's own nvcc flags
with and without --split-compile, disassembles both (cuobjdump) and compares the instructions of every
kernel, addresses stripped (kernels paired by code, not by name). Prints one line per kernel and a verdict.
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
            name = match.group(1)
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
    # Kernels are compared as code, not by name: the names carry a per-compilation id of the anonymous
    # namespace whose format differs between nvcc's modes, so stop 21's name pairing found no pairs.
    # Each side's kernels, sorted by their instructions, must match one for one.
    a_side = sorted(plain.values())
    b_side = sorted(split.values())
    same = a_side == b_side
    for a, b in zip(a_side, b_side, strict=False):
        print(f"{'same' if a == b else 'DIFFERENT'}: {len(a)} / {len(b)} instructions")
    if len(a_side) != len(b_side):
        print(f"DIFFERENT: {len(a_side)} kernels without --split-compile, {len(b_side)} with it")
    print(f"{source.name}: {len(plain)} kernels; --split-compile leaves the SASS {'identical' if same else 'CHANGED'}")

if __name__ == "__main__":
    main(sys.argv[1])
