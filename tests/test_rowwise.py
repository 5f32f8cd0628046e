"""The rowwise kind: row reductions in the expression, the plan the templates evaluate, the spec's
rules, and the generated package (CPU paths; the kernels are built and tested by tests/run.sh and on
the GPU machine)."""

from __future__ import annotations

import ast

import pytest
import torch
import torch.nn.functional as F
from click.testing import CliRunner
from conftest import tree

from kernelgen.cli import main
from kernelgen.errors import AnswersError, ExprError, SpecError
from kernelgen.expr import parse
from kernelgen.nodes import Reduce, RowRef, children
from kernelgen.spec import ROWWISE_EXAMPLES, OpSpec, PackageSpec

SOFTMAX = "exp(x - max(x)) / sum(exp(x - max(x)))"
LOG_SOFTMAX = "x - max(x) - log(sum(exp(x - max(x))))"
RMSNORM = "x * rsqrt(mean(x * x) + 1e-6) * w"
LAYERNORM = "(x - mean(x)) * rsqrt(mean((x - mean(x)) ** 2) + 1e-5) * w + b"


def rowwise(text: str, inputs=("x",), weights=()):
    return parse(text, inputs, weights=weights, rowwise=True)


def reference_fn(text: str, inputs=("x",), weights=()):
    """The generated reference() body (reductions as locals, then the output), as a function."""
    plan = rowwise(text, inputs, weights).emit_plan()
    spelled = {"sum": "torch.sum", "mean": "torch.mean", "max": "torch.amax", "min": "torch.amin"}
    lines = [f"def reference({', '.join((*inputs, *weights))}):"]
    for index, r in enumerate(plan["reductions"]):
        lines.append(f"    _r{index} = {spelled[r['func']]}({r['torch']}, dim=-1, keepdim=True)")
    lines.append(f"    return {plan['output']['torch']}")
    scope: dict[str, object] = {"torch": torch}
    exec(compile("\n".join(lines), "<reference>", "exec"), scope)  # our own emitted code, from the plan
    return scope["reference"]


def _rowrefs(node) -> set[int]:
    found = {node.index} if isinstance(node, RowRef) else set()
    for child in children(node):
        found |= _rowrefs(child)
    return found


def _has_reduction_node(node) -> bool:
    return isinstance(node, Reduce) or any(_has_reduction_node(child) for child in children(node))


# ---- the parser --------------------------------------------------------------------------------


def test_equal_reductions_are_planned_once_inner_first():
    plan = rowwise(SOFTMAX).plan()
    assert [stage.func for stage in plan.reductions] == ["max", "sum"]
    assert [stage.canonical for stage in plan.reductions] == ["max(x)", "sum(exp(x - max(x)))"]
    layernorm = rowwise(LAYERNORM, weights=("w", "b")).plan()
    assert [stage.canonical for stage in layernorm.reductions] == ["mean(x)", "mean((x - mean(x)) ** 2.0)"]
    # the output refers to the reductions by number, never recomputes them
    assert _rowrefs(plan.output) == {0, 1} and not _has_reduction_node(plan.output)
    assert "_r[0]" in rowwise(LOG_SOFTMAX).emit_plan()["output"]["cpp"]


@pytest.mark.parametrize("text", [SOFTMAX, LOG_SOFTMAX, RMSNORM, LAYERNORM, "min(x) + max(x, 0.5) * sum(x * y)"])
def test_canonical_text_parses_back_to_the_same_tree(text):
    inputs = ("x", "y") if "y" in text else ("x",)
    weights = tuple(w for w in ("w", "b") if f" {w}" in f" {text}")
    first = rowwise(text, inputs, weights)
    assert rowwise(first.canonical, inputs, weights).tree == first.tree


@pytest.mark.parametrize(("text", "message"), [
    ("sum(x, x)", r"sum\(\) takes 1 argument \(a row reduction\), got 2 in 'sum\(x, x\)' at column 1"),
    ("sum()", r"sum\(\) takes 1 argument \(a row reduction\), got 0"),
    ("max()", r"max\(\) takes 1 argument \(a row reduction\) or 2 \(elementwise\), got 0"),
    ("x + mean(2.0)", r"mean\(\) reduces no input in 'mean\(2.0\)' at column 5"),
    ("x + sum(w)", r"sum\(\) reduces no input in 'sum\(w\)'"),
    ("x + sum(max(x))", r"sum\(\) reduces no input"),
    ("sum(x, k=1)", r"unsupported keyword argument 'k=1'"),
    ("x * std(x)", r"unknown function 'std'"),
    ("x * v", r"unknown name 'v' at column 5 in --expr; the inputs are: x; the weights are: w"),
    ("x", r"weight 'w' is declared in --weights but not used"),
    ("w * sum(w)", r"uses no input|reduces no input"),
])
def test_malformed_reductions_get_one_line_naming_the_token(text, message):
    with pytest.raises(ExprError, match=message) as info:
        rowwise(text, weights=("w",))
    assert "\n" not in str(info.value)


def test_reductions_need_the_rowwise_kind():
    with pytest.raises(ExprError, match=r"unknown function 'sum'.*row reduction: --kind rowwise"):
        parse("x / sum(x)", ("x",))
    with pytest.raises(ExprError, match=r"max\(\) takes 2 arguments, got 1.*row reduction \(--kind rowwise\)"):
        parse("x - max(x)", ("x",))
    assert parse("max(x, 0)", ("x",)).functions == ("max",)  # two arguments: still elementwise


def test_division_by_a_row_constant_is_one_reciprocal_per_row():
    output = rowwise(LOG_SOFTMAX).emit_plan()["output"]["cpp"]
    assert output == "x - _r[0] - opmath::log(_r[1])"
    output = rowwise("exp(x - max(x)) / sum(x)").emit_plan()["output"]["cpp"]
    assert output == "opmath::exp(x - _r[0]) * (acc_t(1.0) / _r[1])"
    # the whole denominator is the reciprocal's operand, and an elementwise divisor stays a division
    assert rowwise("x / (sum(x) + 1)").emit_plan()["output"]["cpp"] == "x * (acc_t(1.0) / (_r[0] + acc_t(1.0)))"
    assert rowwise("sum(x) / x").emit_plan()["output"]["cpp"] == "_r[0] / x"


@pytest.mark.parametrize(("text", "weights", "baseline"), [
    (SOFTMAX, (), "torch.softmax(x, dim=-1)"),
    (LOG_SOFTMAX, (), "torch.log_softmax(x, dim=-1)"),
    (RMSNORM, ("w",), "torch.nn.functional.rms_norm(x, (x.shape[-1],), w, eps=1e-06)"),
    (LAYERNORM, ("w", "b"), "torch.nn.functional.layer_norm(x, (x.shape[-1],), w, b, eps=1e-05)"),
    ("exp(x - max(x)) / sum(exp(x - min(x)))", (), None),
])
def test_the_benchmark_recognizes_pytorchs_fused_equivalents(text, weights, baseline):
    assert rowwise(text, weights=weights).fused_torch() == baseline


@pytest.mark.parametrize(("text", "weights", "torch_fn"), [
    (SOFTMAX, (), lambda x: torch.softmax(x, -1)),
    (LOG_SOFTMAX, (), lambda x: torch.log_softmax(x, -1)),
    (RMSNORM, ("w",), lambda x, w: F.rms_norm(x, (x.shape[-1],), w, eps=1e-6)),
    (LAYERNORM, ("w", "b"), lambda x, w, b: F.layer_norm(x, (x.shape[-1],), w, b, eps=1e-5)),
])
def test_the_emitted_reference_computes_the_textbook_op(text, weights, torch_fn):
    generator = torch.Generator().manual_seed(0)
    x = torch.randn(7, 33, 129, dtype=torch.float64, generator=generator) * 3
    args = [x] + [torch.randn(129, dtype=torch.float64, generator=generator) for _ in weights]
    torch.testing.assert_close(reference_fn(text, weights=weights)(*args), torch_fn(*args))


def test_the_examples_listed_by_the_tool_all_parse_and_have_a_baseline():
    for _, inputs, weights, text in ROWWISE_EXAMPLES:
        parsed = rowwise(text, tuple(inputs.split(",")), tuple(w for w in weights.split(",") if w))
        assert parsed.fused_torch() is not None
        assert parsed.plan().reductions


# ---- the spec ----------------------------------------------------------------------------------


def test_rowwise_spec_records_inputs_weights_and_the_canonical_expression():
    op = OpSpec.create("rmsnorm", kind="rowwise", inputs="x", weights="w", expr=RMSNORM)
    assert op.record() == {"name": "rmsnorm", "kind": "rowwise", "dtypes": ["float32", "float64", "float16", "bfloat16"],
                           "inputs": ["x"], "weights": ["w"], "expr": "x * rsqrt(mean(x * x) + 1e-06) * w"}
    pkg = PackageSpec.for_new_op(op)
    assert PackageSpec.from_answers(pkg.answers()) == pkg
    assert OpSpec.create("sm", kind="rowwise").expr == SOFTMAX  # the default: a softmax of x


@pytest.mark.parametrize(("kwargs", "message"), [
    (dict(kind="rowwise", expr="x * 2"), r"has no row reduction .* use --kind elementwise"),
    (dict(kind="rowwise", inputs="x,y"), r"--kind rowwise needs --expr"),
    (dict(kind="rowwise", weights="w", expr="x * w"), r"has no row reduction"),
    (dict(kind="rowwise", weights="x", expr=SOFTMAX), r"'x' is declared both in --inputs and in --weights"),
    (dict(kind="rowwise", weights="w,w", expr=RMSNORM), r"weight 'w' is declared twice"),
    (dict(kind="rowwise", weights="Bad", expr=SOFTMAX), r"weight name 'Bad' must be a lowercase identifier"),
    (dict(kind="elementwise", weights="w", expr="x * w"), r"--weights is only for --kind rowwise"),
    (dict(kind="rowwise", abi="full"), r"the rowwise kind's C\+\+ is written for the stable ABI only"),
])
def test_rowwise_spec_errors(kwargs, message):
    with pytest.raises(SpecError, match=message):
        OpSpec.create("op", **kwargs)


def test_a_triton_rowwise_op_fits_a_package_on_the_full_abi():
    op = OpSpec.create("sm_tl", kind="rowwise", backend="triton", abi="full")
    assert op.part == "rowwise_triton"


def test_answers_with_a_bad_weights_field_are_refused():
    data = PackageSpec.for_new_op(OpSpec.create("rms", kind="rowwise", weights="w", expr="x * w / sum(x)")).answers()
    data["ops"][0]["weights"] = "w"  # type: ignore[index]
    with pytest.raises(AnswersError, match=r"'weights' must be a list of strings"):
        PackageSpec.from_answers(data)
    data["ops"][0]["weights"] = ["w); import os  #"]  # type: ignore[index]
    with pytest.raises(AnswersError, match=r"ops\[0\]\.weights: the weight name"):  # names the field it came from
        PackageSpec.from_answers(data)


# ---- the CLI and the generated package ------------------------------------------------------------


def invoke(*args: str):
    return CliRunner().invoke(main, list(args))


def test_new_rowwise_writes_the_op_and_records_its_weights(tmp_path):
    result = invoke("new", "layer-norm", "--kind", "rowwise", "--inputs", "x", "--weights", "w,b", "--expr", LAYERNORM,
                    "--dtypes", "float32,bfloat16", "--defaults", "-o", str(tmp_path))
    assert result.exit_code == 0, result.output
    files = tree(tmp_path / "layer-norm")
    header = files["layer_norm/csrc/layer_norm/layer_norm.h"].decode()
    assert "constexpr int kReductions = 2;" in header
    assert "using Reduce0 = opmath::SumOp<acc_t>;" in header and "constexpr bool kMean0 = true;" in header
    ops_py = files["layer_norm/ops/layer_norm.py"].decode()
    assert "_r0 = torch.mean(x, dim=-1, keepdim=True)  # mean(x)" in ops_py
    for rel, text in files.items():
        if rel.endswith(".py"):
            ast.parse(text.decode(), rel)  # every generated Python file parses
    assert b"weights:\n  - w\n  - b" in files[".copier-answers.yml"]
    assert b"struct MaxOp" in files["layer_norm/csrc/opmath.h"]
    listed = invoke("ops", str(tmp_path / "layer-norm"))
    assert "rowwise" in listed.output and "weights w, b" in listed.output


@pytest.mark.parametrize(("args", "message"), [
    (["--expr", "sum(x, x)"], "--expr: sum() takes 1 argument (a row reduction), got 2"),
    (["--weights", "w", "--expr", "x * sum(w)"], "sum() reduces no input"),
    (["--weights", "", "--expr", SOFTMAX], None),
    (["--abi", "full", "--expr", SOFTMAX], "written for the stable ABI only"),
])
def test_cli_rowwise_errors_are_one_line_and_write_nothing(tmp_path, args, message):
    result = invoke("new", "op", "--kind", "rowwise", "--defaults", "-o", str(tmp_path), *args)
    if message is None:
        assert result.exit_code == 0, result.output  # an empty --weights means none
        return
    assert result.exit_code == 2, result.output
    assert message in result.output and "Traceback" not in result.output
    assert list(tmp_path.iterdir()) == []


def test_add_rowwise_ops_of_both_backends_to_a_library(tmp_path):
    assert invoke("new", "lib", "--op", "muladd", "--inputs", "a,b,c", "--expr", "a*b+c", "--namespace", "team",
                  "--defaults", "-o", str(tmp_path)).exit_code == 0
    lib = tmp_path / "lib"
    for name, backend in (("softmax", "cuda"), ("softmax_tl", "triton")):
        result = invoke("add", name, "--kind", "rowwise", "--backend", backend, "--defaults", "--package", str(lib))
        assert result.exit_code == 0, result.output
    files = tree(lib)
    assert "lib/csrc/softmax/cuda/softmax_kernel.cu" in files and "lib/csrc/softmax_tl" not in "".join(files)
    bench = files["benchmarks/bench_softmax.py"].decode()
    assert 'twins={"softmax_tl": lib.softmax_tl},' in bench  # the twins race
    assert 'fused=("fused", lambda x: torch.softmax(x, dim=-1)),' in bench
    readme = files["README.md"].decode()
    assert "| `torch.ops.team.softmax_tl` | rowwise | Triton |" in readme


@pytest.mark.parametrize("option", ["--weights", "--expr"])
def test_every_injection_payload_through_the_rowwise_options(tmp_path, option):
    # The corpus of tests/test_injection.py through the two options the rowwise kind adds or parses
    # differently: each payload is refused with one line, or the package regenerates byte for byte
    # from its recorded answers (no unrecorded user text in any file).
    from test_injection import PAYLOADS, _check_package, _check_refusal

    for index, payload in enumerate(PAYLOADS):
        values = {"--weights": "w", "--expr": "x * w / sum(x)", option: payload}
        out = tmp_path / f"out{index}"
        result = invoke("new", "pkg", "--kind", "rowwise", "--inputs", "x", "--dtypes", "fp32", "--defaults",
                        "-o", str(out), "--weights", values["--weights"], "--expr", values["--expr"])
        if result.exit_code == 0:
            (root,) = list(out.iterdir())
            _check_package(root, tmp_path)
        else:
            _check_refusal(result, out)


def test_the_output_reuses_a_reduction_argument_it_would_compute_again():
    """softmax: exp(x - max(x)) is summed and then divided: the C++ output reads it as _a1 (kept in
    registers by the kernel) instead of evaluating exp a second time."""
    out = rowwise(SOFTMAX).emit_plan()["output"]
    assert out["kept"] == 1 and out["cpp"] == "_a1 * (acc_t(1.0) / _r[1])"
    assert out["cpp_inputs"] == [] and out["inputs"] == ["x"]
    assert "exp" in out["torch"]  # the reference and Triton are unchanged
    # not when the output also reads the input itself (both would have to stay in registers) ...
    assert rowwise("x * exp(x - max(x)) / sum(exp(x - max(x)))").emit_plan()["output"]["kept"] is None
    # ... nor for a bare input (nothing to save), nor when the argument is not in the output
    assert rowwise("x / sum(x)").emit_plan()["output"]["kept"] is None
    assert rowwise(LAYERNORM, weights=("w", "b")).emit_plan()["output"]["kept"] is None
    # weights may be part of the kept argument
    out = rowwise("x * w / sum(x * w)", weights=("w",)).emit_plan()["output"]
    assert out["kept"] == 0 and out["cpp_weights"] == []
    # a costly argument the output reads is a shared term instead, computed once (test_which_terms_are_shared)
    plan = rowwise("exp(x * w) / sum(exp(x * w))", weights=("w",)).emit_plan()
    assert plan["output"]["kept"] is None and plan["output"]["cpp"] == "_s0 * (acc_t(1.0) / _r[0])"


# A term three steps compute (two reductions and the output), with three divisions in it.
SHARED = "(s / (1 + y * y)) * (s / (1 + y * y)) - max((s / (1 + y * y)) * (s / (1 + y * y))) + mean(s / (1 + y * y))"


def test_a_term_several_steps_compute_is_shared_once():
    """The C++ steps read a costly term several of them compute as _s0, computed once per element (the
    CUDA register kernel keeps it in registers): the term itself, s / (1 + y * y), not its square, which
    would leave the term to the third step. The reference and Triton keep the whole expression; each
    step's C++ names what it reads."""
    plan = rowwise(SHARED, inputs=("s", "y")).emit_plan()
    assert [t["canonical"] for t in plan["shared"]] == ["s / (1.0 + y * y)"]
    assert plan["shared"][0]["inputs"] == ["s", "y"] and plan["shared"][0]["earlier"] == []
    assert [r["cpp"] for r in plan["reductions"]] == ["_s0 * _s0", "_s0"]
    assert [r["cpp_shared"] for r in plan["reductions"]] == [[0], [0]]
    assert [r["cpp_inputs"] for r in plan["reductions"]] == [[], []]
    assert [r["inputs"] for r in plan["reductions"]] == [["s", "y"], ["s", "y"]]
    # the output reuses reduction 0's argument (_a0, kept from that pass), so it reads no term itself
    out = plan["output"]
    assert out["kept"] == 0 and out["cpp"] == "_a0 - _r[0] + _r[1]" and out["cpp_shared"] == [] and out["cpp_inputs"] == []
    assert "/" in out["torch"] and "_s0" not in out["torch"] + out["triton"]


@pytest.mark.parametrize(("text", "inputs", "weights", "shared"), [
    # cheap terms are computed again where they are used: a register per element costs more
    ("(x + res) * rsqrt(mean((x + res) * (x + res)) + 1e-6) * w", ("x", "res"), ("w",), []),
    ("x * 1.5 * (x * 1.5) + max(x * 1.5 * (x * 1.5)) + min(x * 1.5 * (x * 1.5))", ("x",), (), []),
    # terms that read a reduction are not per-element terms
    (SOFTMAX, ("x",), (), []),
    (LAYERNORM, ("x",), ("w", "b"), []),
    # a call computed by a reduction and by the output
    ("x * sigmoid(g) / (sum(abs(x * sigmoid(g))) + 1e-6)", ("x", "g"), (), ["x * sigmoid(g)"]),
    # weights may be part of a term; a later term reads an earlier one
    ("exp(x * w) * tanh(exp(x * w) + x) + sum(exp(x * w)) + max(tanh(exp(x * w) + x))", ("x",), ("w",),
     ["exp(x * w)", "tanh(_s0 + x)"]),
])
def test_which_terms_are_shared(text, inputs, weights, shared):
    plan = rowwise(text, inputs, weights).emit_plan()
    assert [t["canonical"] for t in plan["shared"]] == shared


def test_steps_of_several_trees_share_terms_and_leave_comparisons_whole():
    """share_steps as the backward calls it: a step may be several trees evaluated together (every
    gradient), a subterm repeated within one step is counted once, a comparison (a mask) is not looked
    into, and the names continue after the terms made before (first)."""
    from kernelgen.diff import Compare
    from kernelgen.nodes import BinOp, Call, RowRef, Var
    from kernelgen.rowplan import share_steps

    term = BinOp("/", Var("x"), BinOp("+", Var("y"), Var("y")))
    mask = Compare("==", term, RowRef(0))
    steps = [(Call("exp", (term,)),), (BinOp("*", term, Var("w")), BinOp("*", mask, term))]
    terms, rewritten = share_steps(steps, first=2)
    assert terms == (term,)
    assert rewritten == [(Call("exp", (Var("_s2"),)),), (BinOp("*", Var("_s2"), Var("w")), BinOp("*", mask, Var("_s2")))]
    # the same term in one step only is left to the compiler
    assert share_steps([(term, BinOp("*", term, term)), (Var("x"),)]) == ((), [(term, BinOp("*", term, term)), (Var("x"),)])


def test_the_backward_shares_terms_inside_its_comparisons():
    """As the backward calls it (kids=diff.children, substitute through diff.transform), share_steps looks
    inside a comparison: abs(u)'s sign [u > 0] - [u < 0] reads u's term, as the gradient beside it does,
    rather than computing u again; the comparison itself stays. Its arithmetic counts in steps_cost too."""
    from kernelgen import diff
    from kernelgen.diff import Compare
    from kernelgen.nodes import BinOp, Call, Num, Var
    from kernelgen.rowplan import share_steps, steps_cost

    u = BinOp("/", Var("x"), BinOp("+", BinOp("*", Var("y"), Var("y")), Num(1.0)))
    sign = BinOp("-", Compare(">", u, Num(0.0)), Compare("<", u, Num(0.0)))
    steps = [(Call("sin", (u,)),), (BinOp("*", Var("_grad"), sign),)]

    def substitute(tree, old, new):
        return diff.transform(tree, lambda node: new if node == old else None)

    assert share_steps(steps) == ((), steps)  # the forward's walk: the second step's u is out of sight
    terms, rewritten = share_steps(steps, kids=diff.children, substitute=substitute)
    name = Var("_s0")
    assert terms == (u,)
    assert rewritten == [(Call("sin", (name,)),),
                         (BinOp("*", Var("_grad"), BinOp("-", Compare(">", name, Num(0.0)), Compare("<", name, Num(0.0)))),)]
    assert steps_cost(steps, diff.children) > steps_cost(steps)


def test_code_size_counts_what_a_call_inlines():
    """own_code is own_cost except for the calls whose inlined code outweighs their arithmetic (an accurate sin
    or cos carries its slow path's argument reduction): steps_code, the rowwise backward's GradOp::kCode,
    sums it over each step's distinct subterms as steps_cost sums the arithmetic."""
    from kernelgen.cost import CODE_SIZE, MATH_COST, own_code, own_cost
    from kernelgen.nodes import BinOp, Call, Var
    from kernelgen.rowplan import steps_code, steps_cost

    sine, exp = Call("sin", (Var("x"),)), Call("exp", (Var("x"),))
    assert own_code(sine) == CODE_SIZE["sin"] > MATH_COST["sin"] == own_cost(sine)
    assert own_code(exp) == own_cost(exp) and own_code(BinOp("/", Var("x"), Var("y"))) == own_cost(BinOp("/", Var("x"), Var("y")))
    steps = [(BinOp("*", sine, sine),), (BinOp("+", sine, exp),)]
    assert steps_code(steps) == steps_cost(steps) + 2 * (CODE_SIZE["sin"] - MATH_COST["sin"])
    assert steps_code([(exp,)]) == steps_cost([(exp,)])


def test_terms_that_read_per_row_values_have_a_level():
    """With rows=N, share_steps may make a term of a subtree that reads the first N reductions' per-row values
    (not the row length after them, RowRef(N)); level() says when such a term can be computed: one past the
    last reduction it reads, or an earlier term's level if higher. Without rows, none is made."""
    from kernelgen.nodes import BinOp, Call, RowRef, Var
    from kernelgen.rowplan import level, share_steps, steps_cost

    term = Call("sin", (BinOp("-", Var("x"), RowRef(1)),))
    steps = [(Var("x"),), (BinOp("*", Var("x"), Var("x")),), (term,), (BinOp("*", Var("g"), term),)]
    assert share_steps(steps) == ((), steps)
    terms, rewritten = share_steps(steps, rows=2)
    assert terms == (term,) and rewritten[2] == (Var("_s0"),) and rewritten[3] == (BinOp("*", Var("g"), Var("_s0")),)
    assert level(term) == 2 and level(Var("x")) == 0 and level(BinOp("+", RowRef(0), RowRef(3))) == 4
    assert level(BinOp("*", Var("_s0"), Var("x")), [2]) == 2 and level(BinOp("*", Var("_s1"), RowRef(0)), [0, 3]) == 3
    length = Call("sin", (BinOp("-", Var("x"), RowRef(2)),))  # RowRef(2): the row length of a 2-reduction backward
    assert share_steps([(length,), (BinOp("*", Var("g"), length),)], rows=2)[0] == ()
    # a subterm repeated within one step counts once
    assert steps_cost([(term, term)]) == steps_cost([(term,)]) < steps_cost([(term,), (term,)])


def test_a_light_backward_keeps_its_per_row_terms_in_each_step(tmp_path):
    """A softmax's backward reads exp(x - max(x)) in two reductions and its gradient, but is bound by memory:
    its terms read no per-row value (rowplan.LEVEL_MIN_COST), and the exp is computed in each step, which
    costs no registers."""
    from kernelgen import rowplan
    from kernelgen.render import generate
    from kernelgen.spec import OpSpec, PackageSpec

    spec = OpSpec.create("sm", kind="rowwise", inputs="x", expr="exp(x - max(x)) / sum(exp(x - max(x)))")
    root = generate(PackageSpec.for_new_op(spec), tmp_path)
    header = (root / "sm" / "csrc" / "sm" / "sm.h").read_text().split("---- the backward")[1]
    assert "kShareLevels" not in header and "kGradShared" not in header
    assert header.count("opmath::exp(x - _r[0])") == 3
    assert rowplan.LEVEL_MIN_COST > 58  # its steps' cost


def test_a_weight_named_like_a_template_local_is_mapped_not_refused():
    spec = OpSpec.create("scaled", kind="rowwise", inputs="x", weights="base", expr="x * base / sum(x)")
    assert spec.weights == ("base",) and spec.identifiers("scaled")["base"] == "base_arg"
