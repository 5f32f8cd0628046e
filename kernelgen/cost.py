"""What an expression tree costs and needs: its math cost on a GPU (the elementwise kernel's launch
rule), the functions it calls, and whether it is only smooth for positive inputs (the tests' inputs)."""

from __future__ import annotations

from .emit import small_whole
from .nodes import FUNCTIONS, BinOp, Call, Neg, Node, Power, children, collect, variables

#: Approximate instructions per call of each function on the float path of an H100 (CUDA's
#: accurate libm: exp and rsqrt are a few instructions around the special-function unit; sin and cos
#: add a range reduction; pow is a log, an exp and their special cases). Only the ratio to the bytes an
#: element moves matters (the launch rule of the elementwise kernel); the figures need not be exact.
MATH_COST: dict[str, int] = {
    "exp": 10, "log": 15, "sqrt": 8, "rsqrt": 4, "tanh": 20, "sigmoid": 20, "abs": 1, "sin": 25, "cos": 25,
    "erf": 20, "min": 2, "max": 2, "pow": 40,
}
_DIVISION_COST = 10  # an IEEE float division


def own_cost(node: Node) -> int:
    """The instructions of ``node``'s own operation, its operands not included."""
    own = 0
    if isinstance(node, Call):
        own = MATH_COST[node.func]
    elif isinstance(node, BinOp):
        own = _DIVISION_COST if node.op == "/" else 1
    elif isinstance(node, Power):
        e = node.exponent
        if e in (0.5, -0.5):
            own = MATH_COST["sqrt"]
        elif small_whole(e):  # ipow: repeated squaring
            whole = abs(int(e))
            own = max(1, whole.bit_length() - 1 + bin(whole).count("1") - 1) + (_DIVISION_COST if e < 0 else 0)
        else:
            own = MATH_COST["pow"]
    elif isinstance(node, Neg):
        own = 1
    return own


#: Approximate PTX instructions a call of each function inlines, where that differs from its arithmetic
#: (MATH_COST): the accurate sin and cos carry their slow path's argument reduction (about 100 each, against
#: a cost of 25), log about 33. Measured on sm_90 with nvcc 13 (8 unrolled calls a thread, opmath.h).
#: A kernel that unrolls its elements' arithmetic grows with this, not with the cost:
#: :func:`own_code`.
CODE_SIZE: dict[str, int] = {"sin": 100, "cos": 100, "log": 33}


def own_code(node: Node) -> int:
    """The instructions ``node``'s own operation inlines (:data:`CODE_SIZE`, else :func:`own_cost`)."""
    if isinstance(node, Call) and node.func in CODE_SIZE:
        return CODE_SIZE[node.func]
    return own_cost(node)


def math_cost(node: Node) -> int:
    """A rough count of the float instructions one element of ``node`` costs (:data:`MATH_COST`)."""
    return own_cost(node) + sum(math_cost(child) for child in children(node))


def distinct_math_cost(node: Node, seen: set[Node] | None = None) -> int:
    """:func:`math_cost` with each distinct subexpression counted once, as the compiler computes a repeated
    one once (``(acc + bias) * sigmoid(acc + bias)`` adds once)."""
    seen = set() if seen is None else seen
    if node in seen:
        return 0
    seen.add(node)
    return own_cost(node) + sum(distinct_math_cost(child, seen) for child in children(node))


def functions(node: Node) -> set[str]:
    """The whitelisted functions ``node`` calls."""
    return collect(node, lambda n: n.func if isinstance(n, Call) else None)


def needs_positive(node: Node) -> bool:
    """True if ``node`` is only smooth for positive inputs (log, sqrt, x / y, a fractional power, ...)."""
    if isinstance(node, Call) and FUNCTIONS[node.func].positive_domain:
        return True
    if isinstance(node, BinOp) and node.op == "/" and variables(node.right):
        return True
    if isinstance(node, Power) and (node.exponent < 0 or float(node.exponent) != int(node.exponent)):
        return True
    return any(needs_positive(child) for child in children(node))


#: The math cost (:func:`distinct_math_cost`) above which a matmul epilogue is heavy: see :func:`heavy_epilogue`.
HEAVY_EPILOGUE_COST = 28


def heavy_epilogue(tree: Node) -> bool:
    """True if a matmul epilogue (its tree) costs more fused into the float16/bfloat16 product than in a pass
    of its own.

    The fused kernel applies the epilogue in its epilogue warps, which are few (two warpgroups of a
    persistent kernel on Hopper) and hold the product's next tile while they compute; a pass of its own
    runs on every warp of the GPU, overlapped with its memory traffic, and costs one more read and write
    of the output. On an H100 the fused forward of a bfloat16 4096^3 product takes under 0.02 ms more than
    cuBLAS's product for the epilogues of cost 28 and below that were measured (GELU, SiLU, ReLU squared,
    most draws of the grammar), and 0.19-0.35 ms more for those above, where the separate pass takes
    0.02-0.07 ms (docs/benchmarks.md, "Matmul epilogues: fused or a pass of their own")."""
    return distinct_math_cost(tree) > HEAVY_EPILOGUE_COST
