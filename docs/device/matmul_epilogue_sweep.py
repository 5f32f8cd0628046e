"""Matmul epilogues drawn from the grammar (issue 29: the generated backward on expressions nobody tuned for).

    python docs/device/matmul_epilogue_sweep.py OUT [--seed 40] [--count 8] [--name mmsweep] [--named]
        [--dtypes bfloat16,float16] [--path rule|fused|library]                  # dev machine (needs copier)

Writes one package NAME (default `mmsweep`, also its namespace) under OUT with ops m00, m01, ...: each a matmul whose
epilogue is a random expression over `acc` (and, for about two thirds of them, `bias`), drawn with
docs/device/sweep.py's grammar (0-4 transcendental calls, min/max, pow, nesting), and OUT/mmsweep.json
recording the seed and the expressions. Every op keeps the generated backward (`--backward fused`).
--named adds common epilogues after the drawn ones (GELU's two forms, SiLU, ReLU squared, a bias: n00, n01, ...).

--path picks where float16/bfloat16 apply the epilogue: `rule` (kernelgen's: kernelgen.cost.heavy_epilogue),
`fused` (every epilogue in the product kernels) or `library` (every epilogue in a pass of its own after
cuBLAS's product). Two packages of one draw with `fused` and `library` time the two paths against each other
(docs/device/matmul_paths_bench.py), which is how HEAVY_EPILOGUE_COST was set.

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
from sweep import random_expression


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


#: Common epilogues (--named), which a cost rule must keep fused where fusing pays.
NAMED = [
    ("0.5 * (acc + bias) * (1 + erf((acc + bias) * 0.7071067811865476))", True),
    ("0.5 * acc * (1 + tanh(0.7978845608028654 * (acc + 0.044715 * acc ** 3)))", False),
    ("(acc + bias) * sigmoid(acc + bias)", True),
    ("max(acc + bias, 0) ** 2", True),
    ("acc + bias", True),
]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--seed", type=int, default=40)
    parser.add_argument("--count", type=int, default=8)
    parser.add_argument("--name", default="mmsweep")
    parser.add_argument("--named", action="store_true")
    parser.add_argument("--dtypes", default=None, help="comma-separated (default: kernelgen's)")
    parser.add_argument("--path", choices=["rule", "fused", "library"], default="rule")
    args = parser.parse_args(argv)

    import kernelgen.cost
    from kernelgen.cost import distinct_math_cost
    from kernelgen.render import generate
    from kernelgen.spec import OpSpec, PackageSpec, parse_epilogue

    if args.path != "rule":
        kernelgen.cost.HEAVY_EPILOGUE_COST = 10**9 if args.path == "fused" else -1
    items = epilogues(args.seed, args.count)
    names = [f"m{index:02d}" for index in range(len(items))]
    if args.named:
        items += [{"epilogue": parse_epilogue(text, bias).source, "bias": bias, "origin": "named"} for text, bias in NAMED]
        names += [f"n{index:02d}" for index in range(len(NAMED))]
    dtypes = {"dtypes": args.dtypes.split(",")} if args.dtypes else {}
    ops = [OpSpec.create(name, kind="matmul", epilogue=str(item["epilogue"]), bias=bool(item["bias"]),
                         namespace=args.name, **dtypes)
           for name, item in zip(names, items, strict=True)]
    pkg = PackageSpec.for_new_op(ops[0], name=args.name)
    for op in ops[1:]:
        pkg = pkg.with_op(op)
    args.out.mkdir(parents=True, exist_ok=True)
    root = generate(pkg, args.out, force=False)
    manifest = {"seed": args.seed, "path": args.path,
                "ops": [{"name": op.op_name, "saves_acc": op.saves_acc, "cost": distinct_math_cost(op.parsed_epilogue.tree),
                         "library_dtypes": op.library_product_dtypes, **item} for op, item in zip(ops, items, strict=True)]}
    (args.out / f"{args.name}.json").write_text(json.dumps(manifest, indent=2) + "\n")
    for entry in manifest["ops"]:
        print(f"{entry['name']}: bias={entry['bias']} saves_acc={entry['saves_acc']} cost={entry['cost']} "
              f"library={entry['library_dtypes']}  {entry['epilogue']}")
    print(root)


if __name__ == "__main__":
    main()
