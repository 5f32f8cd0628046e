"""What saved per-row statistics would spare a generated Triton rowwise backward, counted on a machine without a GPU.

    python docs/device/known_stats_count.py PACKAGE_DIR [--ops r00_tl,r07_tl] [--block 4096] [--dtypes fp32,bf16]

The backward's register kernels compute the forward's reductions again from the row (it saves nothing but the
arguments). The first slice of the saved statistics (docs/backward.md, "A plan for the saved statistics") would
have the forward store the reductions that no mask of the backward compares against, and the backward load them.
This tool counts what that slice spares before anything is built: it copies a package that rowwise_sweep.py
generated, and in each op's _<op>_backward_math replaces every such reduction (a stage that kernelgen.diff says is
a forward reduction, that no `(... == _r<k>)` compares against) by a per-row scalar that costs nothing an element (`cols` times a constant,
where the slice would load one value a row); the compiler then drops the reduction's argument where nothing else
reads it. Both copies' one-row backward kernels are compiled for sm_90 (triton_ptx_count.py's count) and their
PTX instructions an element printed side by side. A static count, as triton_ptx_count.py's; it asserts nothing.
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
LINE = re.compile(r"^(\s+)(_r(\d+)) = (.+?)  # (.*)$")


def forward_stages(op: dict) -> set[int]:
    """The backward's stages (kernelgen.diff.rowwise_vjp's order, the kernels' _r<k>) that are forward reductions."""
    from kernelgen import diff
    from kernelgen.expr import parse
    parsed = parse(op["expr"], tuple(op["inputs"]), weights=tuple(op.get("weights") or ()), rowwise=True)
    return {k for k, stage in enumerate(diff.rowwise_vjp(parsed).stages) if stage.forward is not None}


def known(math: str, saved: set[int]) -> tuple[str, list[int]]:
    """``math`` (a _<op>_backward_math body) with the forward's reductions in ``saved`` that no mask compares
    against made per-row scalars."""
    masked = {int(k) for k in re.findall(r"== _r(\d+)\)", math)}
    replaced: list[int] = []
    lines = []
    for line in math.splitlines():
        match = LINE.match(line)
        if match and int(match.group(3)) in saved and int(match.group(3)) not in masked:
            k = int(match.group(3))
            replaced.append(k)
            line = f"{match.group(1)}_r{k} = tl.full((), {k + 1}.5, ACC) * cols  # known: {match.group(5)}"
        lines.append(line)
    return "\n".join(lines), replaced


def rewrite(source: str, op: str, saved: set[int]) -> tuple[str, list[int]]:
    start = source.index(f"def _{op}_backward_math(")
    end = source.index("return ", start)
    body, replaced = known(source[start:end], saved)
    return source[:start] + body + source[end:], replaced


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("package", type=Path)
    parser.add_argument("--ops", default="")
    parser.add_argument("--block", type=int, default=4096)
    parser.add_argument("--dtypes", default="fp32,bf16")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        copy = Path(tmp) / args.package.resolve().name
        shutil.copytree(args.package, copy, ignore=shutil.ignore_patterns("__pycache__", "build"))
        ops_dirs = [d for d in copy.iterdir() if (d / "ops").is_dir()]
        wanted = [name for name in args.ops.split(",") if name]
        # the sweep's expressions (rowwise_sweep.py generate writes them beside the package)
        sweep = json.loads((args.package.resolve().parent / "rowwise_sweep.json").read_text())
        specs = {op["name"]: op for op in (sweep["ops"] if isinstance(sweep, dict) else sweep)}
        names = []
        for path in sorted(ops_dirs[0].joinpath("ops").glob("*.py")):
            source = path.read_text()
            if f"def _{path.stem}_backward_math(" not in source or (wanted and path.stem not in wanted):
                continue
            text, replaced = rewrite(source, path.stem, forward_stages(specs[path.stem]))
            path.write_text(text)
            names.append(path.stem)
            print(f"{path.stem}: known reductions {replaced or 'none'}")
        tables = []
        for package in (args.package, copy):
            run = subprocess.run([sys.executable, str(HERE / "triton_ptx_count.py"), str(package), "--ops", ",".join(names),
                                  "--block", str(args.block), "--dtypes", args.dtypes],
                                 capture_output=True, text=True, check=True)
            tables.append([line.split() for line in run.stdout.splitlines()[1:] if line.strip()])
    print(f"{'op':10s} {'dtype':5s} {'bwd all':>8s} {'known':>8s} {'spared':>7s}   (PTX instructions an element, "
          f"BLOCK {args.block})")
    for before, after in zip(*tables, strict=True):
        if len(before) < 8:
            continue
        was, now = float(before[5]), float(after[5])
        print(f"{before[0]:10s} {before[1]:5s} {was:8.0f} {now:8.0f} {1 - now / was:7.0%}")


if __name__ == "__main__":
    main()
