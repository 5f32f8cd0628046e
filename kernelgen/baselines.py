"""The single fused PyTorch call equal to an expression, where one is known: the eager baseline
the generated benchmark races the op against (``torch.addcmul``, softmax, RMSNorm, ...)."""

from __future__ import annotations

from .emit import float_literal
from .nodes import BinOp, Call, Node, Num, Power, Reduce, Var, children
from .parser import parse_tree

# The rowwise expressions PyTorch computes with one fused call (the benchmark's eager baseline).
# X, W and B stand for any input or weight, 0.125 for any number (the epsilon).
_ROW_BASELINES: tuple[tuple[str, tuple[str, ...], tuple[str, ...], str], ...] = (
    ("exp(X - max(X)) / sum(exp(X - max(X)))", ("X",), (), "torch.softmax({X}, dim=-1)"),
    ("X - max(X) - log(sum(exp(X - max(X))))", ("X",), (), "torch.log_softmax({X}, dim=-1)"),
    ("X * rsqrt(mean(X * X) + 0.125) * W", ("X",), ("W",),
     "torch.nn.functional.rms_norm({X}, ({X}.shape[-1],), {W}, eps={eps})"),
    ("X * rsqrt(mean(X * X) + 0.125)", ("X",), (), "torch.nn.functional.rms_norm({X}, ({X}.shape[-1],), eps={eps})"),
    ("(X - mean(X)) * rsqrt(mean((X - mean(X)) ** 2) + 0.125) * W + B", ("X",), ("W", "B"),
     "torch.nn.functional.layer_norm({X}, ({X}.shape[-1],), {W}, {B}, eps={eps})"),
    ("(X - mean(X)) * rsqrt(mean((X - mean(X)) ** 2) + 0.125)", ("X",), (),
     "torch.nn.functional.layer_norm({X}, ({X}.shape[-1],), eps={eps})"),
)
_ANY_NUMBER = 0.125


def fused_torch(tree: Node, rowwise: bool) -> str | None:
    """A single fused PyTorch call equal to ``tree``, when one is known.

    Elementwise: ``x * y + z`` (and ``z + x * y``) is ``torch.addcmul(z, x, y)``. Rowwise: the
    textbook softmax, log-softmax, RMSNorm and LayerNorm (see :data:`_ROW_BASELINES`).
    """
    if rowwise:
        return _row_baseline(tree)
    if isinstance(tree, BinOp) and tree.op == "+":
        for prod, add in ((tree.left, tree.right), (tree.right, tree.left)):
            if (
                isinstance(prod, BinOp) and prod.op == "*" and isinstance(add, Var)
                and isinstance(prod.left, Var) and isinstance(prod.right, Var)
            ):
                return f"torch.addcmul({add.name}, {prod.left.name}, {prod.right.name})"
    return None


def _row_baseline(tree: Node) -> str | None:
    for text, inputs, weights, call in _ROW_BASELINES:
        _, pattern = parse_tree(text, inputs, weights=weights, rowwise=True)
        binding: dict[str, str] = {}
        if _match(pattern, tree, binding):
            return call.format(**binding)
    return None


def _match(pattern: Node, node: Node, binding: dict[str, str]) -> bool:
    if isinstance(pattern, Var):
        if not isinstance(node, Var):
            return False
        if binding.setdefault(pattern.name, node.name) != node.name:
            return False
        return list(binding.values()).count(node.name) == 1  # distinct placeholders, distinct names
    if isinstance(pattern, Num):
        if not isinstance(node, Num):
            return False
        if pattern.value != _ANY_NUMBER:
            return pattern.value == node.value
        return binding.setdefault("eps", float_literal(node.value)) == float_literal(node.value)
    if type(pattern) is not type(node):
        return False
    if isinstance(pattern, (BinOp, Call, Reduce)) and (
        getattr(pattern, "op", None) != getattr(node, "op", None)
        or getattr(pattern, "func", None) != getattr(node, "func", None)
    ):
        return False
    if isinstance(pattern, Power) and pattern.exponent != node.exponent:  # type: ignore[union-attr]
        return False
    pattern_children, node_children = children(pattern), children(node)
    return len(pattern_children) == len(node_children) and all(
        _match(a, b, binding) for a, b in zip(pattern_children, node_children, strict=True))
