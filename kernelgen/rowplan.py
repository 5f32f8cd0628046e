"""The evaluation order of a rowwise expression: each distinct row reduction once (inner ones
first), then the output elementwise over the row, and every form of them the templates emit."""

from __future__ import annotations

from dataclasses import dataclass

from .emit import CppStyle, TorchStyle, TritonStyle, canonical, emit
from .nodes import Node, Num, Reduce, RowRef, Var, map_children, replace, rowrefs, variables


@dataclass(frozen=True)
class RowStage:
    """One reduction of a rowwise expression: ``func`` over the row of ``arg``, which may use the
    inputs, the weights and earlier reductions (as :class:`~kernelgen.nodes.RowRef`)."""

    func: str
    arg: Node
    canonical: str  # the reduction as written in the canonical expression, e.g. ``max(x)``


@dataclass(frozen=True)
class RowPlan:
    """A rowwise expression in evaluation order: each distinct reduction once (inner ones first),
    then the output, elementwise over the row, in terms of the inputs, weights and reductions."""

    reductions: tuple[RowStage, ...]
    output: Node


def plan(tree: Node) -> RowPlan:
    """Replace each distinct reduction by a RowRef, numbering them inner first: equal reductions
    are computed once (``max(x)`` twice in a softmax is one reduction)."""
    index: dict[Reduce, int] = {}
    stages: list[RowStage] = []

    def rewrite(node: Node) -> Node:
        if isinstance(node, Reduce):
            if node not in index:
                arg = rewrite(node.arg)
                stages.append(RowStage(node.func, arg, canonical(node)))
                index[node] = len(stages) - 1
            return RowRef(index[node])
        return map_children(node, rewrite)

    output = rewrite(tree)
    return RowPlan(tuple(stages), output)


def kept_argument(row_plan: RowPlan, inputs: tuple[str, ...]) -> tuple[int, Node] | None:
    """The reduction whose per-element argument the output recomputes, and the output reading it
    as ``_a<k>`` instead: ``exp(x - _r0)`` in softmax, summed and then divided. Only when the
    rewritten output reads no input directly, so that keeping the argument costs no registers (the
    inputs' registers are free once the argument is computed). The latest such reduction wins."""
    for index in reversed(range(len(row_plan.reductions))):
        arg = row_plan.reductions[index].arg
        if isinstance(arg, (Var, Num)):
            continue  # nothing to save: the input is already in a register
        rewritten = replace(row_plan.output, arg, Var(f"_a{index}"))
        if rewritten != row_plan.output and not variables(rewritten) & set(inputs):
            return index, rewritten
    return None


def plan_forms(
    tree: Node, inputs: tuple[str, ...], weights: tuple[str, ...], acc_type: str = "acc_t", acc: str = "ACC",
) -> dict[str, object]:
    """Every form of :func:`plan` the templates need: per reduction its function, canonical text,
    C++ (reductions as ``_r[k]``), PyTorch and Triton (as ``_rk``) expressions and the names it
    reads; then the same for the output, and the reduction argument it keeps (:func:`kept_argument`)."""
    row_plan = plan(tree)

    def forms(node: Node) -> dict[str, object]:
        used = variables(node)
        return {
            "cpp": emit(node, CppStyle(acc_type)),
            "torch": emit(node, TorchStyle()),
            "triton": emit(node, TritonStyle(acc)),
            "inputs": [name for name in inputs if name in used],
            "weights": [name for name in weights if name in used],
            "rows": sorted(rowrefs(node)),
        }

    output = forms(row_plan.output)
    kept = kept_argument(row_plan, inputs)
    if kept is not None:
        # The C++ output reads reduction k's per-element argument as _a<k> (its callers pass it):
        # the register kernel keeps it from the reduction pass instead of computing it again.
        index, rewritten = kept
        output["kept"] = index
        output["cpp"] = emit(rewritten, CppStyle(acc_type))
        output["cpp_inputs"] = [name for name in inputs if name in variables(rewritten)]
        output["cpp_weights"] = [name for name in weights if name in variables(rewritten)]
    else:
        output.update(kept=None, cpp_inputs=output["inputs"], cpp_weights=output["weights"])
    return {
        "reductions": [
            {"func": stage.func, "canonical": stage.canonical, **forms(stage.arg)}
            for stage in row_plan.reductions
        ],
        "output": output,
    }
