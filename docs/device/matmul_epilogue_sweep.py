"""Matmul epilogues drawn from the grammar (issue 29: the generated backward on expressions nobody tuned for).

    python docs/device/matmul_epilogue_sweep.py OUT [--seed 40] [--count 8]    # dev machine (needs copier)

Writes one package `mmsweep` (namespace `mmsweep`) under OUT with ops m00, m01, ...: each a matmul whose
epilogue is a random expression over `acc` (and, for about two thirds of them, `bias`), drawn with
docs/device/sweep.py's grammar (0-4 transcendental calls, min/max, pow, nesting), and OUT/mmsweep.json
recording the seed and the expressions. Every op keeps the generated backward (`--backward fused`).

The accumulator of a K=4096 product of standard normal inputs has a standard deviation of 64, so the grammar's
leaves are scaled (`acc * 0.05`, as a user's epilogue scales a logit): without it exp() of most draws is
infinite and the draw tests nothing but overflow.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from sweep import random_expression  # noqa: E402


def epilogues(seed: int, count: int) -> list[dict[str, object]]:
    from kernelgen.spec import parse_epilogue

    rng = random.Random(seed)
    chosen: list[dict[str, object]] = []
    while len(chosen) < count:
        bias = rng.random() < 0.67
        leaves = ["acc", "bias"] if bias else ["acc"]
        text = random_expression(rng, leaves, rng.randint(0, 4), rng.randint(2, 5))
        text = text.replace("acc", "(acc * 0.05)")
        if "acc" not in text or (bias and "bias" not in text):
            continue
        source = parse_epilogue(text, bias).source
        if source in (item["epilogue"] for item in chosen):
            continue
        chosen.append({"epilogue": source, "bias": bias, "origin": f"random (seed {seed})"})
    return chosen


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--seed", type=int, default=40)
    parser.add_argument("--count", type=int, default=8)
    args = parser.parse_args(argv)

    from kernelgen.render import generate
    from kernelgen.spec import OpSpec, PackageSpec

    items = epilogues(args.seed, args.count)
    ops = [OpSpec.create(f"m{index:02d}", kind="matmul", epilogue=str(item["epilogue"]), bias=bool(item["bias"]),
                         namespace="mmsweep")
           for index, item in enumerate(items)]
    pkg = PackageSpec.for_new_op(ops[0], name="mmsweep")
    for op in ops[1:]:
        pkg = pkg.with_op(op)
    args.out.mkdir(parents=True, exist_ok=True)
    root = generate(pkg, args.out, force=False)
    manifest = {"seed": args.seed, "ops": [{"name": op.op_name, "saves_acc": op.saves_acc, **item}
                                           for op, item in zip(ops, items, strict=True)]}
    (args.out / "mmsweep.json").write_text(json.dumps(manifest, indent=2) + "\n")
    for entry in manifest["ops"]:
        print(f"{entry['name']}: bias={entry['bias']} saves_acc={entry['saves_acc']}  {entry['epilogue']}")
    print(root)


if __name__ == "__main__":
    main()
