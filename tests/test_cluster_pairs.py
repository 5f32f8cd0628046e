"""The reductions the CUDA cluster kernel completes in pairs, one exchange between its blocks for two
reductions (kernelgen.rowplan.cluster_pairs, Op::kOnline / kCentered in the generated header): which
expressions pair, which must not (a pair whose second reduction is not exactly of the form the kernel
corrects would give wrong sums), and what the header says. The kernel itself runs only on a GPU with
clusters: the generated suites' test_special_values_and_spread_maxima checks it there."""

from __future__ import annotations

import pytest

from kernelgen.expr import parse
from kernelgen.rowplan import cluster_pairs, kept_argument, plan, shared_terms


def _pairs(source: str, inputs: str = "x", weights: str = "") -> list[tuple[int, bool]]:
    names = tuple(inputs.split(","))
    parsed = parse(source, names, weights=tuple(w for w in weights.split(",") if w), rowwise=True)
    _, cpp_plan = shared_terms(plan(parsed.tree))
    kept = kept_argument(cpp_plan, names)
    return cluster_pairs(cpp_plan.reductions, kept[0] if kept else None)


NONE = (-1, False)


@pytest.mark.parametrize("source, inputs, weights, pairs", [
    # the online softmax: a sum (or mean) of exp(f - max(f)) times terms without the maximum
    ("exp(x - max(x)) / sum(exp(x - max(x)))", "x", "", [NONE, (0, False)]),
    ("x - max(x) - log(sum(exp(x - max(x))))", "x", "", [NONE, (0, False)]),
    ("log(mean(exp(x - max(x)) * w)) + max(x)", "x", "w", [NONE, (0, False)]),
    ("exp(x * w - max(x * w)) / sum(exp(x * w - max(x * w)))", "x", "w", [NONE, (0, False)]),
    # the variance about the mean, however the square is written, and with the difference either way round
    ("(x - mean(x)) * rsqrt(mean((x - mean(x)) ** 2) + 1e-5)", "x", "", [NONE, (0, True)]),
    ("(x - mean(x)) * rsqrt(mean((x - mean(x)) * (x - mean(x))) + 1e-5)", "x", "", [NONE, (0, True)]),
    ("x * rsqrt(sum((mean(x) - x) ** 2) + 1e-5)", "x", "", [NONE, (0, True)]),
    ("(x + y - mean(x + y)) * rsqrt(mean((x + y - mean(x + y)) ** 2) + 1e-5)", "x,y", "", [NONE, (0, True)]),
    ("(x - mean(x)) * rsqrt(mean((x - mean(x)) ** 2) + 1e-5) + max(x) - min(x)", "x", "", [NONE, (0, True), NONE, NONE]),
])
def test_pairs(source, inputs, weights, pairs):
    assert _pairs(source, inputs, weights) == pairs


@pytest.mark.parametrize("source, inputs", [
    # one reduction; two that do not depend on each other (each takes its own exchange, as before)
    ("x * rsqrt(mean(x * x) + 1e-6)", "x"),
    ("max(x) - min(x) + x", "x"),
    # the other factor reads the maximum; the exponent is not f - max(f) of the same f; a min is not a max
    ("exp(x - max(x)) / sum(exp(x - max(x)) * max(x))", "x"),
    ("exp(x - max(x)) / sum(exp(2 * x - max(x)))", "x"),
    ("exp(x - min(x)) / sum(exp(x - min(x)))", "x"),
    # not a square of f - mean(f): a sum, not a mean, in the middle; another f; a cube; an absolute value
    ("x * rsqrt(mean((x - sum(x)) ** 2) + 1e-5)", "x"),
    ("x * rsqrt(mean((y - mean(x)) ** 2) + 1e-5)", "x,y"),
    ("x * rsqrt(abs(mean((x - mean(x)) ** 3)) + 1e-5)", "x"),
    ("x * rsqrt(mean(abs(x - mean(x))) + 1e-5)", "x"),
    ("x * rsqrt(mean((x - mean(x)) * (y - mean(x))) + 1e-5)", "x,y"),
])
def test_no_pairs(source, inputs):
    assert all(pair == NONE for pair in _pairs(source, inputs))


def test_a_reduction_between_them_that_reads_the_first_keeps_them_apart():
    # mean(x - max(x)) needs the row's maximum before the sum has it: the maximum cannot wait.
    # (After the sum, the maximum is the row's again: a later reduction may read it.)
    assert _pairs("exp(x - max(x)) / sum(exp(x - max(x))) + mean(x - max(x))") == [NONE, (0, False), NONE]
    source = "sum(exp(x - max(x)) * mean(x - max(x))) + x"
    assert _pairs(source) == [NONE, NONE, NONE]


def test_spans_do_not_overlap():
    # Two pairs: the softmax of x and the variance of y, one after the other, each with its own span.
    pairs = _pairs("exp(x - max(x)) / sum(exp(x - max(x))) + (y - mean(y)) * rsqrt(mean((y - mean(y)) ** 2) + 1e-5)",
                   "x,y")
    taken = [(j, s) for s, (j, _) in enumerate(pairs) if j >= 0]
    assert len(taken) == 2
    (j0, s0), (j1, s1) = taken
    assert s0 < j1 or s1 < j0  # disjoint spans: at most one reduction waits at a time


def test_a_centred_sum_the_output_keeps_is_not_paired():
    # The output reuses the centred sum's argument (kept): computed about the block's mean, no factor
    # brings it to the row's, so that pair is not taken. (The exp form's kept values are rescaled.)
    parsed = parse("(x - mean(x)) ** 2 / sum((x - mean(x)) ** 2)", ("x",), rowwise=True)
    _, cpp_plan = shared_terms(plan(parsed.tree))
    kept = kept_argument(cpp_plan, ("x",))
    assert kept is not None and kept[0] == 1
    assert cluster_pairs(cpp_plan.reductions, kept[0]) == [NONE, NONE]
    assert cluster_pairs(cpp_plan.reductions, None) == [NONE, (0, True)]


def test_the_header_declares_the_pairs_only_where_there_are_some(tmp_path):
    from kernelgen.render import generate
    from kernelgen.spec import OpSpec, PackageSpec

    ops = [OpSpec.create("sm", kind="rowwise", inputs=["x"], expr="exp(x - max(x)) / sum(exp(x - max(x)))"),
           OpSpec.create("ln", kind="rowwise", inputs=["x"], expr="(x - mean(x)) * rsqrt(mean((x - mean(x)) ** 2) + 1e-5)"),
           OpSpec.create("rms", kind="rowwise", inputs=["x"], expr="x * rsqrt(mean(x * x) + 1e-6)")]
    pkg = PackageSpec.for_new_op(ops[0], name="pairs")
    for op in ops[1:]:
        pkg = pkg.with_op(op)
    root = generate(pkg, tmp_path, force=False)
    headers = {op: next(root.glob(f"*/csrc/{op}/{op}.h")).read_text() for op in ("sm", "ln", "rms")}
    assert "static constexpr int kOnline[kReductions] = {-1, 0};" in headers["sm"]
    assert "static constexpr bool kCentered[kReductions] = {false, false};" in headers["sm"]
    assert "static constexpr int kOnline[kReductions] = {-1, 0};" in headers["ln"]
    assert "static constexpr bool kCentered[kReductions] = {false, true};" in headers["ln"]
    assert "kOnline" not in headers["rms"]
