"""Registers and spills of a generated package's Triton kernels, on a machine without a GPU.

    python docs/device/triton_spills.py PACKAGE_DIR [--kernels backward_kernel] [--blocks 4096,8192,16384]

triton.compile with a GPUTarget needs no GPU; ptxas -v (from $CUDA_HOME, default /usr/local/cuda) on the
PTX it makes reports what the H100 would load: registers per thread and bytes spilled. For every op of
the package, each kernel whose name ends with --kernels is compiled at each BLOCK of --blocks with the
op's own warps for that BLOCK (its _num_warps), for float32 and bfloat16, and one line per op printed.
The op's _MAX_BACKWARD_BLOCK, if it has one, is printed beside it.

    python docs/device/triton_spills.py PACKAGE_DIR --backward-choice [--blocks 1024,4096,16384]

prints instead, for every op with a generated backward, the kernel its backward launch takes at each row length
(BLOCK) and dtype, from the same counts, by the package's own rule (_triton_rowwise.backward_launch): the rows kernel
(the weights' sums on chip; "staged" where its staged build), else the kernel of one program a row ("pipelined"
where it loops over its rows at STAGES 2), else the long kernel; rows longer than
_MAX_BACKWARD_BLOCK take the long one. This machine's Triton need not be the GPU's: on stop 65's H200 its counts
differed (r03_tl's kernel of one program a row at rows of 16384 spilled 182 bytes there at 32 warps, 1.2 KB here),
and docs/device/backward_paths.py prints the GPU's own.

    python docs/device/triton_spills.py PACKAGE_DIR --stages 2 [--blocks 4096]

compiles the kernels that take a STAGES constexpr (the backward's kernel of one program a row, where it loops over
rows) at that many pipeline stages, for rows of whole 16-byte vectors, and adds the shared memory the pipeliner
stages the next row in and its count of cp.async instructions (none where it pipelines nothing).
"""

from __future__ import annotations

import argparse
import importlib
import os
import pkgutil
import re
import subprocess
import sys
import tempfile
from pathlib import Path


def ptxas(ptx: str, cuda_home: str) -> str:
    with tempfile.NamedTemporaryFile("w", suffix=".ptx", delete=False) as f:
        f.write(ptx)
        name = f.name
    try:
        done = subprocess.run([f"{cuda_home}/bin/ptxas", "-arch=sm_90a", "-v", name, "-o", os.devnull],
                              capture_output=True, text=True, check=False)
    finally:
        os.unlink(name)
    regs = re.search(r"Used (\d+) registers", done.stderr)
    spilled = re.search(r"(\d+) bytes spill stores", done.stderr)
    return f"{regs.group(1) if regs else '?'} regs, {spilled.group(1) if spilled else '?'} B spilled"


def compile_sm90(triton, tl, kernel, block: int, dtype: str, warps: int, stages: int = 0):
    """``kernel`` compiled for sm_90 at BLOCK ``block``, tensors of ``dtype`` (the per-row values and the weights'
    partial sums in float32), ``warps`` warps. With ``stages`` (a kernel that takes a STAGES constexpr): at that many
    pipeline stages, for aligned rows (every pointer and length divisible by 16, as a launch specialises them); without,
    at one stage."""
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    constexprs = {"BLOCK": block, "ACC": tl.float32}
    attrs = {}
    if "STAGES" in kernel.arg_names:
        constexprs["STAGES"] = stages or 1  # ASTSource takes no default: unstaged, one program a row
    if "KNOWN" in kernel.arg_names:  # the long backward computing the forward's per-row values, as registered
        constexprs["KNOWN"] = False
    if stages and "STAGES" in kernel.arg_names:
        attrs = {(i,): [["tt.divisibility", 16]] for i, a in enumerate(kernel.arg_names)
                 if a.endswith("_ptr") or a in ("rows", "cols")}
    signature = {a: "constexpr" if a in constexprs else "*fp32" if a in ("_stats_ptr", "_known_ptr") or re.fullmatch(r"_p\d+_ptr", a)
                 else f"*{dtype}" if a.endswith("_ptr") else "i32" for a in kernel.arg_names}
    return triton.compile(ASTSource(kernel, signature=signature, constexprs=constexprs, attrs=attrs),
                          target=GPUTarget("cuda", 90, 32), options={"num_warps": warps})


def backward_choice(triton, tl, module, name: str, block: int, dtype: str, cuda_home: str) -> str:
    """The kernel the backward launch takes for rows of ``block`` elements of ``dtype`` (many rows): the package's own
    rule (_triton_rowwise.backward_launch), asked with this machine's counts and an H100's or H200's SMs (132 of 2048
    threads, 65536 registers and 228 KB of shared memory each) in place of the GPU's. "staged" marks the rows
    kernel's staged build, "pipelined" the kernel of one program a row looping over its rows at STAGES 2."""
    if block > module._MAX_BACKWARD_BLOCK:
        return "long (row length)"
    import torch

    shared = importlib.import_module(module.__name__.rsplit(".", 2)[0] + "._triton_rowwise")
    counts = {}

    def resident(kernel, args, options, device):
        warps, stages = options["num_warps"], options.get("STAGES", 1)
        compiled = compile_sm90(triton, tl, kernel, block, dtype, warps, stages if stages > 1 else 0)
        found = re.match(r"(\d+) regs, (\d+) B spilled", ptxas(compiled.asm["ptx"], cuda_home))
        regs, spilled = (int(found.group(1)), int(found.group(2))) if found else (0, 1)
        smem = compiled.metadata.shared
        if smem > 232448:
            raise shared.OutOfResources(smem, 232448, "shared memory")
        counts[kernel] = counts[(kernel, warps, stages)] = f"{warps}w {regs}r" + (f" {spilled} B spilled" if spilled else "")
        registers = -(-max(regs, 1) * 32 // 256) * 256
        return max(1, min(2048 // (32 * warps), 65536 // (registers * warps), 233472 // max(smem, 1))) * 132, spilled

    shared.resident = resident
    getattr(shared, "_ANSWERS", {}).clear()  # the launch's kept answers: these counts are this machine's
    shared._sm_count = lambda device: 132
    options = {"BLOCK": block, "num_warps": module._num_warps(block)}
    device, rows = torch.device("cuda", 0), 1 << 20
    rows_kernel = getattr(module, f"_{name}_backward_rows_kernel", None)
    if rows_kernel is not None:
        plan = shared.backward_launch(rows_kernel, [dtype, block], options, device, rows, rows_kernel=True)
        if plan is not None:
            warps, _, stages = plan
            return f"rows {counts[(rows_kernel, warps, stages)]}" + (" staged" if stages > 1 else "")
    one_row = getattr(module, f"_{name}_backward_kernel")
    plan = shared.backward_launch(one_row, [dtype, block], options, device, rows)
    if plan is None:
        return f"long ({counts[one_row]})"
    warps, _, stages = plan
    return f"one-row {counts[(one_row, warps, 1)]}" + (" pipelined" if stages > 1 else "")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("package", type=Path)
    parser.add_argument("--kernels", default="backward_kernel")
    parser.add_argument("--blocks", default="4096,8192,16384")
    parser.add_argument("--backward-choice", action="store_true",
                        help="the kernel each backward launch takes (the package's rule), instead of the counts")
    parser.add_argument("--stages", type=int, default=0,
                        help="kernels with a STAGES constexpr compiled at it, for aligned rows (pointers and lengths "
                             "multiples of 16, as a launch specialises them), with their shared memory and cp.async count")
    args = parser.parse_args()
    import triton
    import triton.language as tl

    cuda_home = os.environ.get("CUDA_HOME", "/usr/local/cuda")
    sys.path.insert(0, str(args.package))
    name = next(line.split(":", 1)[1].strip() for line in (args.package / ".copier-answers.yml").read_text().splitlines()
                if line.startswith("package:"))
    ops = importlib.import_module(f"{name}.ops")
    for info in pkgutil.iter_modules(ops.__path__):
        module = importlib.import_module(f"{name}.ops.{info.name}")
        if args.backward_choice:
            if hasattr(module, f"_{info.name}_backward_kernel"):
                cells = [f"{block} {dtype}: {backward_choice(triton, tl, module, info.name, block, dtype, cuda_home)}"
                         for block in map(int, args.blocks.split(",")) for dtype in ("fp32", "bf16")]
                print(f"{info.name}: " + "; ".join(cells), flush=True)
            continue
        kernels = [(k, v) for k, v in vars(module).items()
                   if isinstance(v, triton.runtime.jit.JITFunction) and k.endswith(args.kernels)]
        # a rowwise op's warps grow with BLOCK (_num_warps); an elementwise op's are fixed (_NUM_WARPS)
        warps = getattr(module, "_num_warps", None) or (lambda block, module=module: module._NUM_WARPS)
        for kernel_name, kernel in kernels:
            cells = []
            for block in map(int, args.blocks.split(",")):
                for dtype in ("fp32", "bf16"):
                    compiled = compile_sm90(triton, tl, kernel, block, dtype, warps(block), args.stages)
                    staged = (f", {compiled.metadata.shared} B shared, {compiled.asm['ptx'].count('cp.async.c')} cp.async"
                              if args.stages and "STAGES" in kernel.arg_names else "")
                    cells.append(f"{block} {dtype}: {ptxas(compiled.asm['ptx'], cuda_home)}{staged}")
            limit = getattr(module, "_MAX_BACKWARD_BLOCK", None)
            print(f"{kernel_name}" + (f" (_MAX_BACKWARD_BLOCK {limit})" if limit else "") + ": " + "; ".join(cells), flush=True)


if __name__ == "__main__":
    main()
