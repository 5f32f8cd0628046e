"""The evaluation order of a rowwise expression: each distinct row reduction once (inner ones
first), then the output elementwise over the row, and every form of them the templates emit."""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from .cost import distinct_math_cost, own_code, own_cost
from .emit import CppStyle, TorchStyle, TritonStyle, canonical, emit
from .nodes import (
    BinOp,
    Call,
    Neg,
    Node,
    Num,
    Power,
    Reduce,
    RowRef,
    Var,
    children,
    collect,
    map_children,
    replace,
    rowrefs,
    variables,
)

#: A per-element term (no reduction in it) that two or more steps compute is computed once per element
#: by the CUDA register kernel, and kept in registers for every step that reads it, where sharing it
#: saves at least this much arithmetic (:func:`kernelgen.cost.math_cost`: a division, or a
#: transcendental call, computed once more). Each step of a rowwise op is a separate pass over the
#: row, and the compiler does not carry a value from one pass to the next (a division's slow path is a
#: call; the passes are separated by barriers), so a term read by two reductions and the output is
#: otherwise computed three times: on the GPU, such an op (three divisions in the term) ran at a third
#: of torch.compile's speed. A cheap term (x + res, x * 1.5 * (x * 1.5)) is computed again where it is
#: used: a few additions cost less than the register per element a kept term takes.
SHARED_MIN_COST = 8
#: The most shared terms one op keeps (each takes one register per element a thread holds, in the
#: op-math type; Launch's per_thread() counts them).
MAX_SHARED = 4
#: A backward's terms may read per-row values (:func:`level`) only where its steps cost at least this much
#: arithmetic an element before sharing (:func:`steps_cost`): then the op is bound by its arithmetic, and a
#: term computed once instead of in every step that reads it pays for the registers it takes. On an H100
#: (template version 22, docs/backward.md "Stop 49"), seed 36's r02 (cost 280: a sigmoid of a cosine and a
#: sine read by a reduction and the gradients) ran its backward 2.1-2.5x faster in bfloat16 and 1.3x in
#: float32 with them; a softmax's exp(x - max(x)) (cost 58) or a weighted softmax's (77), in memory-bound
#: backwards, cost 13-21% in 2-byte rows of 16384 and up to 54% in float32: the term's register halves the
#: elements a thread holds. (A masked argument is a term whatever its cost: its mask must see its bits.)
LEVEL_MIN_COST = 128


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


def shared_terms(row_plan: RowPlan) -> tuple[tuple[Node, ...], RowPlan]:
    """The per-element terms several steps of ``row_plan`` compute, and the plan with each replaced by
    ``_s<k>`` (:func:`share_steps`, each step one tree: a reduction's argument, then the output)."""
    steps = [(stage.arg,) for stage in row_plan.reductions] + [(row_plan.output,)]
    terms, rewritten = share_steps(steps)
    stages = tuple(RowStage(stage.func, arg, stage.canonical)
                   for stage, (arg,) in zip(row_plan.reductions, rewritten[:-1], strict=True))
    return terms, RowPlan(stages, rewritten[-1][0])


_PLAIN = (BinOp, Call, Power, Neg, Var, Num)


def plain(node: Node, rows: int = 0) -> bool:
    """Whether ``node`` is per-element arithmetic of the columns alone: none of the backward's own nodes
    (a mask's comparison, the row length), which stay where they are, and no per-row value (RowRef), or,
    with ``rows``, only the first ``rows`` ones (the reductions, not the row length after them)."""
    return all(isinstance(n, _PLAIN) or (isinstance(n, RowRef) and n.index < rows) for n in collect(node, lambda n: n))


def level(node: Node, levels: Sequence[int] = (), prefix: str = "_s") -> int:
    """The level of a term: one past the last per-row value it reads (RowRef k: level k + 1), or the level
    of an earlier term it reads (``<prefix><j>``, of level ``levels[j]``), whichever is higher; 0 when it
    reads neither. A term of level L is computed once reductions 0 to L - 1 are known."""
    found = [n.index + 1 for n in collect(node, lambda n: n if isinstance(n, RowRef) else None)]
    found += [levels[int(n.name[len(prefix):])] for n in collect(node, lambda n: n if isinstance(n, Var) else None)
              if n.name.startswith(prefix) and n.name[len(prefix):].isdigit() and int(n.name[len(prefix):]) < len(levels)]
    return max(found, default=0)


Kids = Callable[[Node], Iterable[Node]]


def steps_cost(groups: Iterable[Sequence[Node]], kids: Kids = children, own: Callable[[Node], int] = own_cost) -> int:
    """The arithmetic of steps evaluated one after the other (each a tuple of trees evaluated at one element
    together), a subterm repeated within one step counted once (the compiler computes it once there).
    ``kids`` gives a node's subtrees: a backward passes :func:`kernelgen.diff.children`, which also enters
    its masks' comparisons, whose operands are computed as any other subtree. ``own`` is a node's own
    cost: :func:`kernelgen.cost.own_code` counts the code the steps inline instead (:func:`steps_code`)."""
    cost = 0
    for group in groups:
        nodes: set[Node] = set()
        for tree in group:
            nodes |= collect(tree, lambda n: n, kids)
        cost += sum(own(n) for n in nodes)
    return cost


def steps_code(groups: Iterable[Sequence[Node]], kids: Kids = children) -> int:
    """The instructions one element of the steps inlines (:func:`kernelgen.cost.own_code`), each step's
    distinct subterms once: a kernel that unrolls every step over the elements a thread holds has about
    this many instructions an element, and outgrows the SM's instruction cache where that times the
    elements is large (the rowwise backward's ``GradOp::kCode``)."""
    return steps_cost(groups, kids, own_code)


def share_steps(steps: Sequence[Sequence[Node]], prefix: str = "_s", first: int = 0, rows: int = 0,
                kids: Kids = children,
                substitute: Callable[[Node, Node, Node], Node] = replace,
                ) -> tuple[tuple[Node, ...], list[tuple[Node, ...]]]:
    """The per-element terms several steps compute, and the steps (each a tuple of trees evaluated at one
    element together: a reduction's argument, or every gradient of a backward) with each replaced by
    ``<prefix><k>``, numbered from ``first`` (``<prefix><j>`` for j < first: terms already made, which
    these may read). Greedy: of the terms that two or more steps compute, the one after whose sharing the
    steps and the terms cost the least arithmetic in all (:func:`kernelgen.cost.math_cost`), while that
    saves at least :data:`SHARED_MIN_COST`, up to :data:`MAX_SHARED` terms. So ``s`` is shared rather than
    ``s * s`` where the output reads ``s`` and two reductions ``s * s``. A later term may read an earlier
    one. A term repeated within one step is left to the compiler, which computes it once there.
    A term reads no per-row value, or with ``rows``, only the first ``rows`` reductions' (:func:`level`:
    such a term is computed once the reductions it reads are known; the backward's kernels do that).
    ``kids`` and ``substitute`` (``substitute(tree, old, new)``) walk and rewrite the trees: a backward passes
    ones that enter its masks' comparisons, so that ``[u > 0]``'s ``u`` reads a term as the gradient does."""
    current = [tuple(step) for step in steps]
    terms: list[Node] = []

    def total(groups: Iterable[Sequence[Node]]) -> int:
        return steps_cost(groups, kids)

    while len(terms) < MAX_SHARED:
        found: dict[Node, set[int]] = {}
        for index, step in enumerate(current):
            for tree in step:
                for sub in collect(tree, lambda n: n, kids):
                    if not isinstance(sub, (Var, Num)) and plain(sub, rows):
                        found.setdefault(sub, set()).add(index)
        name = Var(f"{prefix}{first + len(terms)}")
        options = []
        for node, where in found.items():
            if len(where) > 1:
                rewritten = [tuple(substitute(tree, node, name) for tree in step) for step in current]
                options.append((total(rewritten) + total([(node,)]), canonical(node), node, rewritten))
        if not options:
            break
        # The least arithmetic after sharing (the text breaks ties: a fixed choice), if it saves enough.
        cost, _, node, rewritten = min(options, key=lambda item: (item[0], item[1]))
        if total(current) - cost < SHARED_MIN_COST:
            break
        terms.append(node)
        current = rewritten
    return tuple(terms), current


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


@dataclass(frozen=True)
class OnlineSum:
    """A sum (or mean) over the row of ``exp(arg - max(arg)) * factor``, where ``max(arg)`` is the reduction
    ``max_index``: a pass can add it while it finds that maximum, rescaling what it has added so far by
    ``exp(old - new)`` whenever the running maximum grows (the online softmax), instead of a pass of its own
    after the maximum is known. ``factor`` is None where there is none (softmax, logsumexp)."""

    index: int  # the sum's reduction
    max_index: int
    factor: Node | None


def _factors(node: Node) -> list[Node]:
    if isinstance(node, BinOp) and node.op == "*":
        return _factors(node.left) + _factors(node.right)
    return [node]


class _Stage(Protocol):
    @property
    def func(self) -> str: ...
    @property
    def arg(self) -> Node: ...


def _walk(node: Node) -> Iterable[Node]:
    """Every node of the tree (:func:`kernelgen.diff.walk` also knows the backward's comparisons)."""
    yield node
    for child in children(node):
        yield from _walk(child)


Walk = Callable[[Node], Iterable[Node]]


def online_sum(stages: Sequence[_Stage], index: int, walk: Walk = _walk) -> OnlineSum | None:
    """Reduction ``index`` of ``stages`` (a :class:`RowPlan`'s reductions, or a backward's stages) as an
    :class:`OnlineSum`, if it is one: a sum or mean whose argument is a product of ``exp(f - _rj)``, with
    reduction j ``max(f)``, and factors that do not read ``_rj``."""
    stage = stages[index]
    if stage.func not in ("sum", "mean"):
        return None
    factors = _factors(stage.arg)
    for position, factor in enumerate(factors):
        if not (isinstance(factor, Call) and factor.func == "exp" and isinstance(factor.args[0], BinOp)):
            continue
        difference = factor.args[0]
        if difference.op != "-" or not isinstance(difference.right, RowRef):
            continue
        j = difference.right.index
        if stages[j].func != "max" or stages[j].arg != difference.left:
            continue
        rest = factors[:position] + factors[position + 1:]
        if any(RowRef(j) in list(walk(other)) for other in rest):
            continue
        product: Node | None = None
        for other in rest:
            product = other if product is None else BinOp("*", product, other)
        return OnlineSum(index, j, product)
    return None


def centered_sum(stages: Sequence[_Stage], index: int) -> int | None:
    """The reduction j that reduction ``index`` of ``stages`` is centred on, if it is a sum or mean of
    ``(f - _rj) ** 2`` (or ``(f - _rj) * (f - _rj)``, or with ``_rj - f``) and reduction j is ``mean(f)``:
    a variance about the row's mean, which blocks holding parts of the row can compute about their own
    means and combine exactly (Chan's formula)."""
    stage = stages[index]
    if stage.func not in ("sum", "mean"):
        return None
    arg = stage.arg
    if isinstance(arg, Power) and arg.exponent == 2.0:
        difference = arg.base
    elif isinstance(arg, BinOp) and arg.op == "*" and arg.left == arg.right:
        difference = arg.left
    else:
        return None
    if not (isinstance(difference, BinOp) and difference.op == "-"):
        return None
    for value, ref in ((difference.left, difference.right), (difference.right, difference.left)):
        if isinstance(ref, RowRef) and stages[ref.index].func == "mean" and stages[ref.index].arg == value:
            return ref.index
    return None


def cluster_pairs(stages: Sequence[_Stage], kept: int | None = None) -> list[tuple[int, bool]]:
    """Per reduction of ``stages``, the earlier reduction it completes together with in the CUDA cluster
    kernel, and whether as a centred sum (:func:`centered_sum`) rather than an :class:`OnlineSum`; (-1,
    False) where none. A pair (j, s) is taken only where no reduction between them reads j (those would
    need its row value before s has it) and its span overlaps no other pair's, so that at most one value
    waits at a time; a centred sum only where the output does not keep its argument (``kept``: that
    argument is computed about the block's mean, which no factor brings to the row's)."""
    pairs = [(-1, False)] * len(stages)
    end = -1  # the last pair's second reduction: spans do not overlap
    for index in range(len(stages)):
        online = online_sum(stages, index)
        centred = centered_sum(stages, index) if online is None else None
        j = online.max_index if online is not None else centred
        if j is None or j <= end:
            continue
        if centred is not None and kept == index:
            continue
        if any(j in rowrefs(stages[t].arg) for t in range(j + 1, index)):
            continue
        pairs[index] = (j, centred is not None)
        end = index
    return pairs


def long_passes(stages: Sequence[_Stage], walk: Walk = _walk, online: bool = True,
                known: Collection[int] = ()) -> list[list[int]]:
    """The passes over a row of the long kernels, which stream the row from memory once per pass: each
    reduction of ``stages`` in the first pass after those whose results it reads, so independent reductions
    share a pass (``max(x) - min(x)``: one pass, not two). With ``online`` (the Triton kernels), an
    :class:`OnlineSum` joins its maximum's pass where the rest of what it reads is known by then (softmax and
    logsumexp: one pass, then the output's); the CUDA multi-pass kernel does not rescale a sum, and passes
    ``online=False``. A stage in ``known`` (a per-row value the kernel loads: the forward's, saved) takes no pass,
    and the stages that read it may take the first."""
    level: list[int] = []
    for index, stage in enumerate(stages):
        if index in known:
            level.append(-1)
            continue
        reads = {node.index for node in walk(stage.arg) if isinstance(node, RowRef)}
        paired = online_sum(stages, index, walk) if online else None
        if paired is not None and paired.max_index not in known:
            others = reads - {paired.max_index}
            if all(level[k] < level[paired.max_index] for k in others):
                level.append(level[paired.max_index])
                continue
        level.append(1 + max((level[k] for k in reads), default=-1))
    return [[k for k in range(len(level)) if level[k] == p] for p in range(max(level, default=-1) + 1)]


def pass_of(stages: Sequence[_Stage], walk: Walk = _walk) -> list[int]:
    """Per reduction of ``stages``, its pass of the CUDA multi-pass kernel (:func:`long_passes` without online
    sums): the kernel streams the row once for each pass, folding all of its reductions together."""
    found = [0] * len(stages)
    for number, members in enumerate(long_passes(stages, walk, online=False)):
        for k in members:
            found[k] = number
    return found


def pass_forms(stages: Sequence[_Stage], columns: Sequence[str], emit_triton: Callable[[Node], str],
               walk: Walk = _walk, known: Collection[int] = ()) -> list[dict[str, Any]]:
    """:func:`long_passes` as the Triton long kernels need them: per pass its ``reductions``, the ``columns``
    they read, and its online sums (``online``: sum -> its maximum; ``sums``: maximum -> its sums;
    ``factors``: sum -> the rest of its term, printed by ``emit_triton``, or None; ``before_sum``: sum -> the lines
    its term needs computed first, which the caller fills in, empty here)."""
    passes = []
    for members in long_passes(stages, walk, known=known):
        online = {k: found for k in members if (found := online_sum(stages, k, walk)) is not None and found.max_index in members}
        used = {node.name for k in members for node in walk(stages[k].arg) if isinstance(node, Var)}
        passes.append({
            "reductions": members,
            "columns": [name for name in columns if name in used],
            "online": {k: found.max_index for k, found in online.items()},
            "sums": {j: [k for k, found in online.items() if found.max_index == j]
                     for j in sorted({found.max_index for found in online.values()})},
            "factors": {k: emit_triton(found.factor) if found.factor is not None else None for k, found in online.items()},
            "before_sum": {},
        })
    return passes


def plan_forms(
    tree: Node, inputs: tuple[str, ...], weights: tuple[str, ...], acc_type: str = "acc_t", acc: str = "ACC",
) -> dict[str, object]:
    """Every form of :func:`plan` the templates need: per reduction its function, canonical text,
    C++ (reductions as ``_r[k]``), PyTorch and Triton (as ``_rk``) expressions and the names it
    reads; then the same for the output, and the reduction argument it keeps (:func:`kept_argument`).
    The C++ forms read the shared terms (:func:`shared_terms`) as ``_s<k>``: ``shared`` lists them (C++,
    the columns each reads, itself or through an earlier term, and the earlier terms it reads), and
    ``cpp_inputs``, ``cpp_weights`` and ``cpp_shared`` what each step's C++ reads; the other forms are
    the whole expression. ``long_passes`` are the Triton long kernels' passes (:func:`pass_forms`), ``passes``
    each reduction's pass of the CUDA multi-pass kernel (:func:`pass_of`)."""
    row_plan = plan(tree)
    terms, cpp_plan = shared_terms(row_plan)
    columns_of: list[set[str]] = []
    for term in terms:
        used = variables(term)
        columns_of.append({name for name in used if not name.startswith("_s")}
                          | {c for k, cols in enumerate(columns_of) if f"_s{k}" in used for c in cols})

    def cpp_reads(node: Node) -> dict[str, object]:
        used = variables(node)
        return {
            "cpp_inputs": [name for name in inputs if name in used],
            "cpp_weights": [name for name in weights if name in used],
            "cpp_shared": [k for k in range(len(terms)) if f"_s{k}" in used],
        }

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
    passes = pass_forms(row_plan.reductions, (*inputs, *weights), lambda node: emit(node, TritonStyle(acc)))
    kept = kept_argument(cpp_plan, inputs)
    if kept is not None:
        # The C++ output reads reduction k's per-element argument as _a<k> (its callers pass it):
        # the register kernel keeps it from the reduction pass instead of computing it again.
        index, cpp_output = kept
        output["kept"] = index
    else:
        output["kept"], cpp_output = None, cpp_plan.output
    output.update(cpp=emit(cpp_output, CppStyle(acc_type)), **cpp_reads(cpp_output))
    # The arithmetic of one element in the register kernel: each shared term once, then every step (the
    # output with its kept argument, which a kernel may compute again), a term repeated within a step once.
    steps = [stage.arg for stage in cpp_plan.reductions] + [cpp_plan.output]
    element_cost = sum(distinct_math_cost(node) for node in (*terms, *steps))
    pairs = cluster_pairs(cpp_plan.reductions, kept[0] if kept is not None else None)
    return {
        "math_cost": element_cost,
        "cluster_pairs": [{"with": j, "centered": centred} for j, centred in pairs],
        "shared": [
            {"cpp": emit(term, CppStyle(acc_type)), "canonical": canonical(term), "earlier": [f"_s{j}" for j in range(k)],
             "inputs": [name for name in inputs if name in columns_of[k]],
             "weights": [name for name in weights if name in columns_of[k]],
             **cpp_reads(term)}
            for k, term in enumerate(terms)
        ],
        "reductions": [
            {"func": stage.func, "canonical": stage.canonical, **forms(stage.arg),
             "cpp": emit(cpp_stage.arg, CppStyle(acc_type)), **cpp_reads(cpp_stage.arg)}
            for stage, cpp_stage in zip(row_plan.reductions, cpp_plan.reductions, strict=True)
        ],
        "output": output,
        "long_passes": passes,
        "passes": pass_of(row_plan.reductions),
    }
