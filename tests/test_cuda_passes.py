"""The passes of the rowwise CUDA multi-pass kernels (kernelgen.rowplan.pass_of; Op::kPass and GradOp::kPass in
the generated header): the kernel streams a row from memory once a pass and folds every reduction of the pass in
that loop, so independent reductions must share a pass and a reduction must come after every one it reads,
directly, through a mask, or through a shared term. The kernels themselves run in the generated suites on a GPU
(rows of 65536 and 65537 in the backward's tests, 262147 in the forward's)."""

from __future__ import annotations

import itertools

import pytest

from kernelgen import diff
from kernelgen.expr import parse
from kernelgen.nodes import RowRef
from kernelgen.rowplan import pass_of, plan


def _forward(source: str, inputs: str = "x", weights: str = "") -> list[int]:
    parsed = parse(source, tuple(inputs.split(",")), weights=tuple(w for w in weights.split(",") if w), rowwise=True)
    return pass_of(plan(parsed.tree).reductions)


@pytest.mark.parametrize("source, inputs, weights, passes", [
    # no online sums in the CUDA kernel: softmax's sum reads the maximum, so it takes the next pass
    ("exp(x - max(x)) / sum(exp(x - max(x)))", "x", "", [0, 1]),
    ("max(x) - min(y) + mean(x * y)", "x,y", "", [0, 0, 0]),
    ("(x - mean(x)) * rsqrt(mean((x - mean(x)) ** 2) + 1e-5)", "x", "", [0, 1]),
    ("x * sum(x - mean(x)) + max(y)", "x,y", "", [0, 1, 0]),
    ("x * rsqrt(mean(x * x) + 1e-6) * w", "x", "w", [0]),
    # a chain: each reads the one before
    ("x / (abs(sum(x / (abs(sum(x)) + 1))) + 1)", "x", "", [0, 1]),
])
def test_forward_passes(source, inputs, weights, passes):
    assert _forward(source, inputs, weights) == passes


def _backward(source: str, inputs: tuple[str, ...] = ("x",), weights: tuple[str, ...] = ()) -> tuple[list, list[int]]:
    parsed = parse(source, inputs, weights=weights, rowwise=True)
    stages = diff.rowwise_vjp(parsed).stages
    return stages, pass_of(stages, diff.walk)


def _reads(stages, k: int) -> set[int]:
    return {node.index for node in diff.walk(stages[k].arg) if isinstance(node, RowRef)}


@pytest.mark.parametrize("source, inputs, weights", [
    ("exp(x - max(x)) / sum(exp(x - max(x)))", ("x",), ()),
    ("x * rsqrt(mean(x * x) + 1e-6) * w", ("x",), ("w",)),
    ("(x - mean(x)) * rsqrt(mean((x - mean(x)) ** 2) + 1e-5) * w + b", ("x",), ("w", "b")),
    # masks: [f == max(f)] reads the maximum, and the count of ties is a reduction of its own
    ("x * rsqrt(max(x * y / (abs(sum(x * w)) + 1)) ** 2 + 1e-6) * tanh(max(x * x * w)) + v", ("x", "y"), ("w", "v")),
    ("abs(sum(x * y)) * min(x - mean(y)) + y", ("x", "y"), ()),
])
def test_backward_passes_come_after_what_they_read_and_share_otherwise(source, inputs, weights):
    stages, passes = _backward(source, inputs, weights)
    assert len(passes) == len(stages)
    for k in range(len(stages)):
        read = _reads(stages, k)
        # after every reduction it reads (a mask's comparison included) ...
        assert all(passes[j] < passes[k] for j in read), (k, read, passes)
        # ... and in the first pass that allows: a reduction in pass p > 0 reads one of pass p - 1
        assert passes[k] == 0 or any(passes[j] == passes[k] - 1 for j in read), (k, read, passes)


def test_the_masked_backward_takes_three_passes_not_seven():
    # seed 52's r09 has this shape: three forward reductions (a sum, two masked maxima) and four of the backward's
    stages, passes = _backward(
        "x * rsqrt(max(x * x / (abs(sum(x * w)) + 1)) ** 2 + 1e-6) * tanh(max(x * x * w)) + v", ("x",), ("w", "v"))
    assert len(stages) == 7 and len(set(passes)) == 3


def test_the_header_declares_the_passes_only_where_two_reductions_share_one(tmp_path):
    from kernelgen.render import generate
    from kernelgen.spec import OpSpec, PackageSpec

    ops = [OpSpec.create("sm", kind="rowwise", inputs=["x"], expr="exp(x - max(x)) / sum(exp(x - max(x)))"),
           OpSpec.create("rng", kind="rowwise", inputs=["x"], expr="(x - min(x)) / (max(x) - min(x) + 1e-6)"),
           OpSpec.create("rms", kind="rowwise", inputs=["x"], weights=["w"], expr="x * rsqrt(mean(x * x) + 1e-6) * w")]
    pkg = PackageSpec.for_new_op(ops[0], name="passes")
    for op in ops[1:]:
        pkg = pkg.with_op(op)
    root = generate(pkg, tmp_path, force=False)
    headers = {op: next(root.glob(f"*/csrc/{op}/{op}.h")).read_text() for op in ("sm", "rng", "rms")}
    forward = {op: text.split("struct GradOp")[0] for op, text in headers.items()}
    backward = {op: text.split("struct GradOp")[1] for op, text in headers.items()}
    # softmax: its sum reads its maximum (no kPass in the forward); the backward's own sum(_grad * e) joins the
    # forward's sum, both after the maximum
    assert "kPass" not in forward["sm"]
    assert "static constexpr int kPass[kReductions] = {0, 1, 1};" in backward["sm"]
    # min(x) and max(x) in one pass
    assert "static constexpr int kPass[kReductions] = {0, 0};" in forward["rng"]
    # RMSNorm: one reduction forward; the backward's mean(x * x) and mean(_grad * w * x) in one pass
    assert "kPass" not in forward["rms"]
    assert "static constexpr int kPass[kReductions] = {0, 0};" in backward["rms"]


@pytest.mark.parametrize("source, inputs, weights", [
    ("(x - mean(x)) * rsqrt(mean((x - mean(x)) ** 2) + 1e-5) * w + b", ("x",), ("w", "b")),
    ("x * rsqrt(max(x * y / (abs(sum(x * w)) + 1)) ** 2 + 1e-6) * tanh(max(x * x * w)) + v", ("x", "y"), ("w", "v")),
    ("abs(sum(x * y)) * min(x - mean(y)) + y", ("x", "y"), ()),
])
def test_the_backward_is_numbered_pass_by_pass_and_means_the_same(source, inputs, weights):
    # The register and cluster kernels complete a pass's reductions with one barrier, so GradOp numbers them
    # pass by pass (_jinja._in_pass_order); renumbering back gives the trees diff.rowwise_vjp wrote.
    from kernelgen._jinja import _in_pass_order

    original = diff.rowwise_vjp(parse(source, inputs, weights=weights, rowwise=True))
    ordered = _in_pass_order(original)
    passes = pass_of(ordered.stages, diff.walk)
    assert passes == sorted(passes) and passes[0] == 0 and all(b - a <= 1 for a, b in itertools.pairwise(passes))
    assert all(j < k for k in range(len(ordered.stages)) for j in _reads(ordered.stages, k))
    # the permutation: each ordered stage is the original stage with the same canonical text
    old_of = [next(j for j, stage in enumerate(original.stages) if stage.canonical == new.canonical)
              for new in ordered.stages]
    assert sorted(old_of) == list(range(len(original.stages)))

    def back(tree):
        return diff.transform(tree, lambda n: RowRef(old_of[n.index]) if isinstance(n, RowRef) and n.index < len(old_of) else None)

    assert [back(stage.arg) for stage in ordered.stages] == [original.stages[j].arg for j in old_of]
    assert {k: back(v) for k, v in ordered.input_plan.items()} == original.input_plan
    assert {k: back(v) for k, v in ordered.weight_plan.items()} == original.weight_plan
