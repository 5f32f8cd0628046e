"""kernelgen's own structure: no import circles between its modules, lazy imports included."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "kernelgen"


def _imports() -> dict[str, set[str]]:
    """Module -> the kernelgen modules it imports anywhere in its body (top level or in a function)."""
    modules = {path.stem for path in PACKAGE.glob("*.py")}
    graph: dict[str, set[str]] = {}
    for path in PACKAGE.glob("*.py"):
        found: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.level == 1:
                found |= {node.module.split(".")[0]} if node.module else {alias.name for alias in node.names}
            elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("kernelgen."):
                found.add(node.module.split(".")[1])
            elif isinstance(node, ast.Import):
                found |= {alias.name.split(".")[1] for alias in node.names if alias.name.startswith("kernelgen.")}
        graph[path.stem] = found & modules
    return graph


def test_the_graph_sees_imports():
    graph = _imports()
    assert {"spec", "names", "template_scan", "render", "_jinja", "_version"} <= set(graph)
    assert "paths" in graph["template_scan"] and "template_scan" in graph["names"]
    assert "spec" in graph["render"] and "_version" in graph["_jinja"]


def test_no_import_circles():
    graph = _imports()
    circles = []

    def visit(module: str, path: list[str]) -> None:
        for dep in sorted(graph[module]):
            if dep in path:
                circles.append(" -> ".join([*path[path.index(dep):], dep]))
            else:
                visit(dep, [*path, dep])

    for module in sorted(graph):
        visit(module, [module])
    assert not circles, circles


def test_the_command_line_uses_only_the_public_api():
    """cli.py parses options, prompts, calls kernelgen.api and prints: it never reaches into the
    renderer, the merge or the files a package records (`kernelgen doctor` is its own module)."""
    assert _imports()["cli"] <= {"api", "doctor", "errors", "fsutil", "spec", "_version"}, _imports()["cli"]


def test_the_expression_facade_keeps_its_names():
    """kernelgen.expr re-exports what other code imports from it; each name is owned by one module."""
    from kernelgen import emit, expr, nodes, parser, rowplan

    for name in expr.__all__:
        assert getattr(expr, name) is not None, name
    assert {"Num", "Var", "Neg", "BinOp", "Power", "Call", "Reduce", "RowRef", "ParsedExpr", "parse", "FUNCTIONS",
            "REDUCTIONS"} <= set(expr.__all__)
    assert expr.Num is nodes.Num and expr.FUNCTIONS is nodes.FUNCTIONS and expr.RowPlan is rowplan.RowPlan
    assert expr.MAX_EXPR_LENGTH == parser.MAX_EXPR_LENGTH and expr._emit is emit.emit and expr._children is nodes.children


def test_the_version_comes_from_the_distribution():
    from importlib.metadata import version

    import kernelgen

    assert kernelgen.__version__ == version("kernelgen")
