"""Stop 45 (issue 28): the CUDA cluster kernel completing two reductions in one exchange between its
blocks (Op::kOnline: a softmax's maximum and its sum of exp(f - max), a LayerNorm's mean and its mean of
squared deviations), against the same ops without the pairs, in one package and one process.

    python docs/device/pairs_ab.py generate OUT [--only softmax,layernorm]   # dev machine (copier)

writes OUT/rsweep-ops (namespace rsweep) with every chosen expression of rowwise_sweep.py's fixed list
twice, as CUDA C++ ops: `<id>`, as kernelgen writes it, and `<id>_np`, the same op with the kOnline and
kCentered lines taken out of its header (csrc/<id>_np/<id>_np.h), which is what an op without pairs
compiles to. OUT/rowwise_sweep.json lists both under the expression's id, so that

    python docs/device/rowwise_sweep.py run OUT/rsweep-ops --backends cuda --cols 32768,65536,262144 ...

times them side by side, interleaved, against one torch.compile of the reference and a copy.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
import rowwise_sweep as sweep

#: The fixed expressions that pair reductions, and two that do not (controls: their kernels do not change).
DEFAULT = "softmax,log_softmax,lse,wsoftmax,layernorm,resln,range4,rmsnorm"


def generate(out: Path, only: list[str]) -> None:
    from kernelgen.render import generate as write_package
    from kernelgen.spec import OpSpec, PackageSpec

    fixed = {ident: (inputs, weights, text) for ident, inputs, weights, text in sweep.FIXED}
    unknown = [ident for ident in only if ident not in fixed]
    if unknown:
        raise SystemExit(f"not in rowwise_sweep.FIXED: {', '.join(unknown)}")
    ops, rows = [], []
    for ident in only:
        inputs, weights, text = fixed[ident]
        item = sweep._item(ident, inputs.split(","), weights.split(",") if weights else [], text, "fixed")
        for name in (ident, f"{ident}_np"):
            ops.append(OpSpec.create(name, kind="rowwise", backend="cuda", inputs=item["inputs"],  # type: ignore[arg-type]
                                     weights=item["weights"] or None, expr=str(item["expr"]),  # type: ignore[arg-type]
                                     namespace=sweep.PACKAGE.split("-")[0], backward="vjp"))
            rows.append({"name": name, "backend": "cuda", **item})
    pkg = PackageSpec.for_new_op(ops[0], name=sweep.PACKAGE)
    for op in ops[1:]:
        pkg = pkg.with_op(op)
    out.mkdir(parents=True, exist_ok=True)
    root = write_package(pkg, out, force=False)
    for ident in only:
        header = next(root.glob(f"*/csrc/{ident}_np/{ident}_np.h"))
        text = header.read_text()
        stripped = re.sub(r"^  static constexpr (int kOnline|bool kCentered)\[.*\n", "", text, flags=re.MULTILINE)
        header.write_text(stripped)
        print(f"{ident}_np: {'pairs taken out' if stripped != text else 'no pairs (control)'}")
    (out / sweep.MANIFEST).write_text(json.dumps({"seed": None, "count": len(only), "ops": rows}, indent=1) + "\n")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    g = sub.add_parser("generate")
    g.add_argument("out", type=Path)
    g.add_argument("--only", default=DEFAULT)
    args = parser.parse_args()
    generate(args.out, args.only.split(","))


if __name__ == "__main__":
    main()
