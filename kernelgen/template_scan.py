"""The identifiers kernelgen's templates use, read from the template files at run time (never
written down: the templates change, and a list would go stale), so that an input or op name cannot
collide with a local of the generated code: :func:`template_names` (identifiers, the affixes glued to
input names, the files that render input names in code) and :func:`op_module_names` (what an op's
Python module binds at its top level)."""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass, field
from pathlib import Path

from . import paths
from .errors import KernelgenError

_JINJA_TAG = re.compile(r"\{\{.*?\}\}|\{%.*?%\}|\{#.*?#\}", re.DOTALL)
_FOR_INPUTS = re.compile(r"\{%[-+]?\s*for\s+([A-Za-z_]\w*)\s+in\s+([^%]*?)\s*[-+]?%\}")
_PLACEHOLDER = re.compile(r"([A-Za-z0-9_]*)\{\{[-+]?\s*([^{}]*?)\s*[-+]?\}\}([A-Za-z0-9_]*)")
_SET_EXPR = re.compile(r"\{%[-+]?\s*set\s+([A-Za-z_]\w*)\s*=\s*([^%]*?)\s*[-+]?%\}")
_SET_BLOCK = re.compile(r"\{%[-+]?\s*set\s+([A-Za-z_]\w*)\s*[-+]?%\}(.*?)\{%[-+]?\s*endset\s*[-+]?%\}", re.DOTALL)
_INPUT_LIST = re.compile(r"(?:\w+\.)?(?:inputs|weights|columns)\s*(?:\[[^\]]*\]\s*)?(?:\|\s*join\b.*)?\Z", re.DOTALL)
_INPUT_INDEX = re.compile(r"(?:\w+\.)?(?:inputs|weights|columns)\s*\[\s*-?\d+\s*\]\Z")
_PY_STRIP = re.compile(
    r"""(?P<str>(?P<prefix>[rRbBfFuU]{0,2})(?P<q>\"\"\"|'''|"|')(?P<body>(?:\\.|(?!(?P=q))[^\\])*)(?P=q))"""
    r"""|\#[^\n]*"""
)
_C_STRIP = re.compile(r"""//[^\n]*|/\*.*?\*/|"(?:\\.|[^"\\\n])*"|'(?:\\.|[^'\\\n])*'""", re.DOTALL)
_IDENTIFIER = re.compile(r"(?<![A-Za-z0-9_.\x00\x01])(?<!->)([A-Za-z_][A-Za-z0-9_]*)(?![A-Za-z0-9_\x00\x01])")
#: The suffixes of the C-family files the templates render.
C_SUFFIXES = (".c", ".cc", ".cpp", ".cu", ".cuh", ".h", ".hpp")


@dataclass(frozen=True)
class TemplateNames:
    """What the templates use: identifiers (with the files using them) and input-derived names."""

    #: identifier -> the template files (relative paths) that use it in code
    identifiers: dict[str, tuple[str, ...]] = field(default_factory=dict)
    #: (prefix, suffix) pairs the templates glue to an input name: ("", "_ptr") for {{ x }}_ptr
    affixes: frozenset[tuple[str, str]] = frozenset()
    #: relative paths of the files that render input names outside strings
    input_files: frozenset[str] = frozenset()
    #: (prefix, suffix) pairs the templates glue to the op name: ("", "_cpu") for {{ op_name }}_cpu
    op_affixes: frozenset[tuple[str, str]] = frozenset()


def _python_code(text: str) -> str:
    """``text`` without comments and string literals (the {...} parts of f-strings are kept)."""
    def keep(match: re.Match[str]) -> str:
        if match.group("str") is None:
            return " "
        if "f" in match.group("prefix").lower():
            return " " + " ".join(re.findall(r"\{([^{}]*)\}", match.group("body"))) + " "
        return " "

    return _PY_STRIP.sub(keep, text)


def input_variables(text: str) -> set[str]:
    """The template variables that render input names: ``{% for v in inputs %}`` loop variables,
    ``{% set args = inputs | join(", ") %}``, and ``{% set typed %}`` blocks looping over inputs."""
    found = {m.group(1) for m in _FOR_INPUTS.finditer(text) if re.search(r"\b(?:inputs|weights|columns)\b", m.group(2))}
    found |= {m.group(1) for m in _SET_EXPR.finditer(text) if _INPUT_LIST.match(m.group(2))}
    found |= {m.group(1) for m in _SET_BLOCK.finditer(text) if re.search(r"\b(?:inputs|weights|columns)\b", m.group(2))}
    return found


def template_code(text: str, suffix: str) -> str | None:
    """The code of a Python (``.py``) or C-family template: Jinja tags replaced by a marker
    (``\\x01`` for a tag rendering input names, ``\\x00`` for any other), comments and string
    literals removed (the ``{...}`` parts of f-strings kept). None for other kinds of file."""
    if suffix != ".py" and suffix not in C_SUFFIXES:
        return None
    variables = input_variables(text)

    def mark(match: re.Match[str]) -> str:  # tags first: they may hold quotes
        inner = re.fullmatch(r"\{\{[-+]?\s*(.*?)\s*[-+]?\}\}", match.group(), re.DOTALL)
        return "\x01" if inner and _is_input(inner.group(1), variables) else "\x00"

    code = _JINJA_TAG.sub(mark, text)
    return _python_code(code) if suffix == ".py" else _C_STRIP.sub(" ", code)


def _is_input(expression: str, variables: set[str]) -> bool:
    return expression in variables or _INPUT_INDEX.match(expression) is not None


def scan_template(text: str, suffix: str) -> tuple[set[str], set[tuple[str, str]], bool]:
    """Identifiers used in code, input-derived affixes, and whether input names appear in code."""
    variables = input_variables(text)
    affixes = {
        (m.group(1), m.group(3))
        for m in _PLACEHOLDER.finditer(text)
        if _is_input(m.group(2), variables) and (m.group(1) or m.group(3))
    }
    code = template_code(text, suffix)
    if code is None:
        return set(), affixes, False
    return set(_IDENTIFIER.findall(code)), affixes, "\x01" in code


def op_affixes(text: str) -> set[tuple[str, str]]:
    """The (prefix, suffix) pairs a template glues to ``{{ op_name }}``: ``launch_{{ op_name }}``
    gives ("launch_", ""). A bare ``{{ op_name }}`` gives ("", "")."""
    return {(m.group(1), m.group(3)) for m in _PLACEHOLDER.finditer(text) if m.group(2) == "op_name"}


def rendered_suffix(template_name: str) -> str:
    """The suffix of the file a template renders: ``{{op_name}}.py.jinja`` gives ``.py`` (a
    placeholder stands for a name, so the file is not a dot-file), and a conditional name
    ``{% if sm90 %}{{op_name}}_sm90.cu{% endif %}.jinja`` gives ``.cu``."""
    name = template_name[: -len(".jinja")] if template_name.endswith(".jinja") else template_name
    name = re.sub(r"\{%.*?%\}|\{#.*?#\}", "", name)
    return Path(re.sub(r"\{\{.*?\}\}", "x", name)).suffix


_INCLUDE = re.compile(r"""\{%-?\s*include\s+["']([^"']+)["']""")


@functools.lru_cache(maxsize=8)
def template_names(root: Path, exclude_dirs: frozenset[str] = frozenset()) -> TemplateNames:
    """Scan every ``*.jinja`` file under ``root`` (except top-level ``exclude_dirs``, and Markdown).

    Only Python and C/C++/CUDA files are scanned for identifiers, outside Jinja tags, comments and
    string literals, and not after '.' or '->' (members do not collide with variables). A token
    glued to a tag (``launch_{{ op_name }}``) is not an identifier on its own; when the tag is an
    input (a ``{% for v in inputs %}`` variable or ``inputs[i]``) the glued text is an affix.
    """
    identifiers: dict[str, list[str]] = {}
    affixes: set[tuple[str, str]] = set()
    glued_to_op: set[tuple[str, str]] = set()
    input_files: set[str] = set()
    includes: dict[str, set[str]] = {}
    try:
        paths = sorted(root.rglob("*.jinja"))
    except OSError:
        return TemplateNames()
    for path in paths:
        rel = path.relative_to(root)
        if rel.parts[0] in exclude_dirs or path.name.endswith(".md.jinja"):
            continue
        try:
            text = path.read_text(encoding="utf-8", errors="replace")
        except OSError:
            continue
        includes[rel.as_posix()] = set(_INCLUDE.findall(text))
        suffix = rendered_suffix(path.name)
        found, glued, uses_inputs = scan_template(text, suffix)
        affixes |= glued
        if suffix in (".py", *C_SUFFIXES):
            glued_to_op |= op_affixes(text)
        if uses_inputs:
            input_files.add(rel.as_posix())
        for name in found:
            identifiers.setdefault(name, []).append(rel.as_posix())
    # A file included into one that renders inputs shares that file's scope: it renders inputs too.
    pending = list(input_files)
    while pending:
        for target in includes.get(pending.pop(), ()):
            if target in includes and target not in input_files:
                input_files.add(target)
                pending.append(target)
    return TemplateNames(
        {name: tuple(files) for name, files in identifiers.items()}, frozenset(affixes), frozenset(input_files),
        frozenset(glued_to_op),
    )


def op_template_names(exclude_dirs: frozenset[str] = frozenset()) -> TemplateNames:
    """:func:`template_names` of kernelgen's own templates (empty if they cannot be found)."""
    try:
        root = paths.template_dir()
    except KernelgenError:
        return TemplateNames()
    return template_names(root, exclude_dirs)



_TOP_IMPORT = re.compile(r"^[ \t]*(?:from\s+[\w.{} ]+\s+)?import\s+(.+)$", re.MULTILINE)
_TOP_DEF = re.compile(r"^(?:async\s+)?(?:def|class)\s+([A-Za-z_]\w*)|^([A-Za-z_]\w*)\s*(?::[^=\n]*)?=(?!=)", re.MULTILINE)


@functools.lru_cache(maxsize=4)
def _op_module_names(root: Path) -> dict[str, str]:
    """Module-level names of the generated ops/<op>.py files (and of what they include at the top
    level): imports, functions, classes and assignments, each with a template file that binds it."""
    found: dict[str, str] = {}
    try:
        paths = sorted(root.glob("*/{{package}}/ops/{{op_name}}.py.jinja")) + sorted(root.glob("_shared/ops_*.py.jinja")) + sorted(
            root.glob("_shared/triton_*.py.jinja"))
    except OSError:
        return found
    for path in paths:
        try:
            text = _JINJA_TAG.sub(" ", path.read_text(encoding="utf-8", errors="replace"))
        except OSError:
            continue
        text = _python_code(text)
        rel = path.relative_to(root).as_posix()
        for match in _TOP_IMPORT.finditer(text):
            for item in match.group(1).strip("() ").split(","):
                bound = item.split(" as ")[-1].strip().split(".")[0]
                if bound.isidentifier():
                    found.setdefault(bound, rel)
        for match in _TOP_DEF.finditer(text):
            bound = match.group(1) or match.group(2)
            if bound:
                found.setdefault(bound, rel)
    return found


def op_module_names() -> dict[str, str]:
    """Names an op's Python module binds at its top level (``torch``, ``triton``, ``tl``,
    ``libdevice``, ``wrap_triton``, ``reference``, ...) -> a template file binding it. An op named
    like one would replace it with the op's public function, so such op names are refused."""
    try:
        return _op_module_names(paths.template_dir())
    except KernelgenError:
        return {}
