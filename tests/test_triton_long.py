"""The passes of the Triton long-row kernel (rows past _MAX_BLOCK): which reductions share a pass
(kernelgen.rowplan.long_passes), the sums computed online beside their maximum (online_sum), and the
kernel itself run by Triton's interpreter on the CPU over rows whose maximum rises in every chunk, rows
that start with -inf, rows of -inf, NaN and inf, against the generated test's own error bound; a kernel
without the online rescaling must fail there."""

from __future__ import annotations

import os
import subprocess
import sys

import interpreted
import pytest
from click.testing import CliRunner

from kernelgen.cli import main
from kernelgen.expr import parse
from kernelgen.rowplan import long_passes, online_sum, plan


def _passes(source: str, inputs: str = "x", weights: str = "") -> list[list[int]]:
    parsed = parse(source, tuple(inputs.split(",")), weights=tuple(w for w in weights.split(",") if w), rowwise=True)
    return long_passes(plan(parsed.tree).reductions)


@pytest.mark.parametrize("source, inputs, weights, passes", [
    # softmax, log-softmax and logsumexp: the sum of exp(x - max(x)) joins its maximum's pass
    ("exp(x - max(x)) / sum(exp(x - max(x)))", "x", "", [[0, 1]]),
    ("x - max(x) - log(sum(exp(x - max(x))))", "x", "", [[0, 1]]),
    ("log(mean(exp(x - max(x)) * w)) + max(x)", "x", "w", [[0, 1]]),
    # independent reductions share a pass; a reduction that reads another's result comes after it
    ("max(x) - min(y) + mean(x * y)", "x,y", "", [[0, 1, 2]]),
    ("(x - mean(x)) * rsqrt(mean((x - mean(x)) ** 2) + 1e-5)", "x", "", [[0], [1]]),
    ("x * sum(x - mean(x)) + max(y)", "x,y", "", [[0, 2], [1]]),
    # not online: the other factor reads the maximum; the exponent is not f - max(f) of the same f;
    # a min is not a maximum; the rest of the term reads a reduction of the maximum's pass
    ("exp(x - max(x)) / sum(exp(x - max(x)) * max(x))", "x", "", [[0], [1]]),
    ("exp(x - max(x)) / sum(exp(2 * x - max(x)))", "x", "", [[0], [1]]),
    ("exp(x - min(x)) / sum(exp(x - min(x)))", "x", "", [[0], [1]]),
    ("sum(exp(x - max(x)) * mean(y)) + y", "x,y", "", [[0, 1], [2]]),
])
def test_long_passes(source, inputs, weights, passes):
    assert _passes(source, inputs, weights) == passes


@pytest.mark.parametrize("source, inputs, known, passes", [
    # per-row values loaded (the forward's, saved) take no pass, and what reads them may take the first
    ("exp(x - max(x)) / sum(exp(x - max(x)))", "x", [0], [[1]]),
    ("(x - mean(x)) * rsqrt(mean((x - mean(x)) ** 2) + 1e-5)", "x", [0], [[1]]),
    ("(x - mean(x)) * rsqrt(mean((x - mean(x)) ** 2) + 1e-5)", "x", [0, 1], []),
    ("x * sum(x - mean(x)) + max(y)", "x,y", [0], [[1, 2]]),
    ("x * sum(x - mean(x)) + max(y)", "x,y", [2], [[0], [1]]),
])
def test_long_passes_with_known_stages(source, inputs, known, passes):
    from kernelgen.rowplan import pass_forms
    parsed = parse(source, tuple(inputs.split(",")), rowwise=True)
    stages = plan(parsed.tree).reductions
    assert long_passes(stages, known=known) == passes
    forms = pass_forms(stages, inputs.split(","), str, known=known)
    assert [p["reductions"] for p in forms] == passes
    assert all(not p["online"] for p in forms)  # a sum whose maximum is known is a plain sum


def test_an_online_sum_names_its_maximum_and_the_rest_of_its_term():
    parsed = parse("exp(x - max(x)) * w * y / sum(w * exp(x - max(x)) * y)", ("x", "y"), weights=("w",), rowwise=True)
    stages = plan(parsed.tree).reductions
    found = online_sum(stages, 1)
    assert found is not None and (found.index, found.max_index) == (1, 0)
    assert found.factor is not None and {n.name for n in _leaves(found.factor)} == {"w", "y"}
    assert online_sum(stages, 0) is None  # the maximum itself


@pytest.mark.parametrize("source, inputs, weights, passes, online", [
    # LayerNorm's backward: mean(x) with mean(_grad * w), then the variance with mean(_grad * w * (x - mean(x)))
    ("(x - mean(x)) * rsqrt(mean((x - mean(x)) ** 2) + 1e-5) * w + b", ["x"], ["w", "b"], [[0, 2], [1, 3]], [{}, {}]),
    # a weighted softmax's: the forward's sum and the backward's own, both online beside max(x)
    ("exp(x - max(x)) * w / sum(exp(x - max(x)) * w)", ["x"], ["w"], [[0, 1, 2]], [{1: 0, 2: 0}]),
    # x / max(abs(x)): the mask [abs(x) == max(abs(x))] reads the maximum, so its sum comes after it
    ("x / max(abs(x))", ["x"], [], [[0, 1], [2]], [{}, {}]),
])
def test_the_backward_long_kernel_takes_the_same_passes(source, inputs, weights, passes, online):
    from kernelgen._jinja import rowwise_backward_python
    backward = rowwise_backward_python({"names": {}}, source, inputs, weights)
    assert [p["reductions"] for p in backward["long_passes"]] == passes
    assert [p["online"] for p in backward["long_passes"]] == online


@pytest.mark.parametrize("source, inputs, weights, once", [
    ("x / (y * y + 1.0) * tanh(min(sin(x / (y * y + 1.0) * w) * v)) * cos(x / (y * y + 1.0))", ["x", "y"], ["w", "v"],
     ["x / "]),
    ("x * y + max((x * y - min(x * w)) ** 2 * w)", ["x", "y"], ["w"], []),
])
def test_a_masked_arguments_subterms_are_computed_once_and_exact(source, inputs, weights, once):
    # Where the gradients are computed, a mask's argument reads the subterms it shares with the gradients (_e<i>):
    # each is computed once, with exact operations, so the mask sees the operations the reduction's argument
    # (exact_args, computed whole) is made of, in the same order, and the gradients compute none of them again.
    import ast
    import re

    from kernelgen._jinja import rowwise_backward_python
    backward = rowwise_backward_python({"names": {}}, source, inputs, weights)
    shared = dict(backward["exact_bindings"])
    assert shared and backward["masked"]

    def whole(text: str) -> str:  # every _e<i> replaced by what it computes
        return re.sub(r"\b_e\d+\b", lambda match: f"({whole(shared[match.group(0)])})", text)

    def tree(text: str) -> str:  # the operations and their order, whatever the parentheses
        return ast.dump(ast.parse(text, mode="eval"))

    for k in backward["masked"]:
        assert tree(whole(backward["exact_read"][k])) == tree(backward["exact_args"][k])
    gradients = " ".join([text for _, text in backward["triton"]["bindings"]] + backward["triton"]["grads"])
    assert any(re.search(rf"\b{name}\b", gradients) for name in shared)  # the gradients read the shared terms
    for op in once:  # ... and compute none of them again
        assert op not in gradients and sum(text.count(op) for text in shared.values()) == 1, op


def test_the_other_reductions_compute_a_masked_arguments_subterms_as_the_mask_does():
    # sum(_grad * x * cos(x / (y * y + 1.0)) / (y * y + 1.0)) reads x / (y * y + 1.0), a subterm of the masked min's
    # argument, which the kernels compute exact (_e2). The sum's argument computes it with the same exact operations,
    # not contracted: the kernel then holds one copy of it and of cos of it, and the compiler computes each once.
    import re

    from kernelgen._jinja import rowwise_backward_python
    source = "x / (y * y + 1.0) * tanh(min(sin(x / (y * y + 1.0) * w) * v)) * cos(x / (y * y + 1.0))"
    backward = rowwise_backward_python({"names": {}}, source, ["x", "y"], ["w", "v"])
    shared = dict(backward["exact_bindings"])

    def whole(text: str) -> str:  # every _e<i> replaced by what it computes
        return re.sub(r"\b_e\d+\b", lambda match: whole(shared[match.group(0)]), text)

    quotient = next(whole(text) for text in shared.values() if whole(text).startswith("x / "))
    plain = [r["arg"] for k, r in enumerate(backward["triton"]["reductions"]) if k not in backward["masked"]]
    assert any(f"libdevice.cos({quotient})" in arg for arg in plain)
    assert not any("y * y" in arg for arg in plain)  # no contracted copy left
    torch_args = [r["arg"] for r in backward["torch"]["reductions"]]
    assert any("torch.cos(x / (y * y + 1.0))" in arg for arg in torch_args)  # the CPU reference keeps plain PyTorch


def _leaves(node):
    from kernelgen.nodes import Var, collect
    return collect(node, lambda n: n if isinstance(n, Var) else None)


_DRIVER = """
kernel = getattr(mod, f"_{op}_long_kernel")
# An op whose backward reads the forward's per-row values: the forward saves them (_save 1) into a buffer as long
# as any op needs (rows x 64), and the backward's long kernel runs both with them (KNOWN) and without.
saves = "_save" in kernel.arg_names
failures = []
for dtype, acc in ((torch.float32, tl.float32), (torch.float64, tl.float64)):
    for case in ("plain", "rising", "special"):
        args = suite.make_args((4, 20000), dtype, "cpu", seed=5)
        if case == "rising":  # each chunk's maximum above the last: every lane rescales at every chunk
            args[0] = args[0] + torch.linspace(0, 40, 20000, dtype=dtype)
        if case == "special":
            args[0][0, :9000] = -float("inf")  # a row that starts with -inf: its sum must not become NaN
            args[0][1, :] = -float("inf")  # a row of -inf: NaN, as exp(-inf - (-inf)) makes the exact sum
            args[0][2, 7777] = float("nan")
            args[0][3, 123] = float("inf")
        out = torch.full(args[0].shape, float("nan"), dtype=dtype)
        if saves:
            kernel[(4,)](*args, out, 20000, torch.empty(4 * 64, dtype=dtype), 1, BLOCK=4096, ACC=acc,
                         **mod._long_forward(dtype)[1])
        else:
            kernel[(4,)](*args, out, 20000, BLOCK=4096, ACC=acc, **mod._long_forward(dtype)[1])
        if case != "special":
            try:
                suite.assert_matches(out, args)
            except AssertionError as err:
                failures.append(f"{dtype} {case}: {str(err)[:200]}")
            continue
        want = suite.op.reference(*[t.double() for t in args])
        finite = torch.isfinite(want)
        if not (torch.equal(torch.isnan(out), torch.isnan(want)) and torch.equal(torch.isinf(out), torch.isinf(want))):
            failures.append(f"{dtype} {case}: non-finite elements differ from the reference's")
        elif finite[0].all():  # row 0: finite, though it starts with -inf; within the bound
            rest = [a[:1] for a in args[:len(suite.op.inputs)]] + list(args[len(suite.op.inputs):])
            try:
                suite.assert_matches(out[:1], rest)
            except AssertionError as err:
                failures.append(f"{dtype} {case} row 0: {str(err)[:200]}")
# The backward's long kernel (float32: the float64 exact gradients are no more exact than the op's): an op without
# weights writes the inputs' gradients from its last pass; an op with weights writes the per-row values only, and
# the weights' kernel computes every gradient from them, then the column sum adds the weights' partial sums, as the
# registered backward launches them.
shared = importlib.import_module("longrows._triton_rowwise")
n_in, n_w = len(suite.op.inputs), len(suite.op.weights)
long_kernel = getattr(mod, f"_{op}_backward_long_kernel")
known_build = "KNOWN" in long_kernel.arg_names
assert known_build == saves, "the forward saves per-row values exactly where the backward's long kernel can load them"
for case in [f"{rows} {known}" for rows in ("plain", "rising") for known in (("recomputed", "known") if saves else ("recomputed",))]:
    args, grad = suite.backward_args((3, 20000), torch.float32, "cpu", seed=41)
    if case.startswith("rising"):
        args[0] = args[0] + torch.linspace(0, 40, 20000)
    extra, flag = [], {}
    if saves:  # the forward's per-row values, saved by its long kernel
        known = torch.full((3 * 64,), float("nan"))
        kernel[(3,)](*args, torch.empty_like(args[0]), 20000, known, 1, BLOCK=4096, ACC=tl.float32,
                     **mod._long_forward(torch.float32)[1])
        extra, flag = [known], {"KNOWN": case.endswith("known")}
    if not n_w:
        dxs = [torch.full_like(args[0], float("nan")) for _ in range(n_in)]
        long_kernel[(3,)](grad, *args, *dxs, *[1] * n_in, 20000, *extra, BLOCK=4096, ACC=tl.float32, KEEP="", STREAM="",
                          **flag)
        try:
            suite.assert_gradients_match(dxs, grad, args)
        except AssertionError as err:
            failures.append(f"backward {case}: {str(err)[:200]}")
        continue
    stats = torch.full((3 * 64,), float("nan"))
    long_kernel[(3,)](grad, *args, stats, 20000, *extra, BLOCK=4096, ACC=tl.float32, KEEP="", STREAM="", **flag)
    # the weights' kernel at both of its tiles (_triton_rowwise.weight_tile): the wide one, and the narrow one taken
    # where the wide one spills
    for tile_rows, tile_cols, _ in (shared.WEIGHT_TILE, shared.WEIGHT_TILE_NARROW):
        dxs = [torch.full_like(args[0], float("nan")) for _ in range(n_in)]
        partials = [torch.full((1, 20000), float("nan")) for _ in range(n_w)]
        getattr(mod, f"_{op}_weight_grad_kernel")[(triton.cdiv(20000, tile_cols), 1)](
            grad, *args, *dxs, stats, *partials, *[1] * (n_in + n_w), 3, 20000, 3, BLOCK_R=tile_rows, BLOCK_C=tile_cols,
            ACC=tl.float32)
        weight_grads = []
        for partial in partials:
            weight_grads.append(torch.full((20000,), float("nan")))
            shared._column_sum_kernel[(triton.cdiv(20000, 32),)](partial, weight_grads[-1], 1, 20000, BLOCK_P=128, BLOCK_C=32)
        try:
            suite.assert_gradients_match(dxs + weight_grads, grad, args)
        except AssertionError as err:
            failures.append(f"backward {case} {tile_rows}x{tile_cols}: {str(err)[:200]}")
        # the inputs' gradients alone (the weights' flags 0): the same bits
        alone = [torch.full_like(args[0], float("nan")) for _ in range(n_in)]
        getattr(mod, f"_{op}_weight_grad_kernel")[(triton.cdiv(20000, tile_cols), 1)](
            grad, *args, *alone, stats, *partials, *[1] * n_in, *[0] * n_w, 3, 20000, 3, BLOCK_R=tile_rows,
            BLOCK_C=tile_cols, ACC=tl.float32)
        if not all(torch.equal(a, b) for a, b in zip(alone, dxs)):
            failures.append(f"backward {case} {tile_rows}x{tile_cols}: dx differs when no weight's gradient is asked for")
print("ok" if not failures else "FAILED " + " | ".join(failures))
"""

#: name, inputs, weights, expression: softmax with a weight in its sum, logsumexp, and a sum of exp(x - max(x))
#: beside independent reductions of the same pass.
_OPS = [
    ("wsm", "x", "w", "exp(x - max(x)) * w / sum(exp(x - max(x)) * w)"),
    ("lse", "x", "", "log(sum(exp(x - max(x)))) + max(x)"),
    ("mixed", "x,y", "w", "max(x) - min(y) + mean(x * w) + y * sum(exp(x - max(x)) * y * w) / sum(exp(x - max(x)))"),
]


def _package(tmp_path):
    pytest.importorskip("triton", reason="the Triton backend needs triton")
    pytest.importorskip("torch")
    root = tmp_path / "longrows"
    for index, (name, inputs, weights, expr) in enumerate(_OPS):
        args = ["--kind", "rowwise", "--backend", "triton", "--inputs", inputs, "--expr", expr,
                "--dtypes", "float32,float64", "--defaults"] + (["--weights", weights] if weights else [])
        if index == 0:
            result = CliRunner().invoke(main, ["new", "longrows", "--op", name, *args, "--output", str(tmp_path)])
        else:
            result = CliRunner().invoke(main, ["add", name, *args, "--package", str(root)])
        assert result.exit_code == 0, result.output
    driver = tmp_path / "driver.py"
    driver.write_text(interpreted.prelude("longrows") + _DRIVER)
    return root, driver


def _run(root, driver, op: str) -> str:
    done = subprocess.run([sys.executable, str(driver), str(root), op], capture_output=True, text=True,
                          env={**os.environ, "TRITON_INTERPRET": "1"}, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout.strip().splitlines()[-1]


def test_the_long_kernel_computes_online_sums_in_the_interpreter(tmp_path):
    root, driver = _package(tmp_path)
    for name, *_ in _OPS:
        source = (root / "longrows" / "ops" / f"{name}.py").read_text()
        assert "_scale = tl.where(" in source, name  # the sums are computed online
        assert _run(root, driver, name) == "ok", name
    # Without the rescaling, what a lane added before its maximum grew is too large: caught in the forward's
    # long kernel and in the backward's.
    path = root / "longrows" / "ops" / "wsm.py"
    text = path.read_text()
    assert text.count("_acc1 = _acc1 * _scale + ") == 2 and text.count("_acc2 = _acc2 * _scale + ") == 1
    for old, new in (("_acc1 = _acc1 * _scale + ", "_acc1 = _acc1 + "), ("_acc2 = _acc2 * _scale + ", "_acc2 = _acc2 + ")):
        path.write_text(text.replace(old, new, 1))
        verdict = _run(root, driver, "wsm")
        assert verdict.startswith("FAILED"), f"a kernel without the rescaling ({old}) passed"
    path.write_text(text)
