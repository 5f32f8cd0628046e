"""The identifiers of the generated code for a user's names: each input and weight name of an op
(:func:`input_identifiers`) and the C++ namespace of an op (:func:`cpp_namespace`).

A user may name an input anything lowercase (`q`, `mask`, `eps`, `out`, `torch`): the public Python
function keeps that name, and everywhere the generated code uses the input as an identifier it uses a
name that collides with nothing: not with the templates' own identifiers (:mod:`kernelgen.template_scan`)
nor with a reserved C, CUDA or C++ library name (:mod:`kernelgen.reserved`).
"""

from __future__ import annotations

import re

from .reserved import C_AND_CUDA_NAMES, C_MACRO_NAMES, CPP_LIBRARY_NAMESPACES, EMITTED_NAMES
from .template_scan import C_SUFFIXES, op_template_names

#: Input names that are common and safe although the templates use them as identifiers: every
#: use of them in the templates is a comprehension variable or a parameter of a function that
#: takes no input (tests/test_hardening.py checks that this stays true).
SAFE_INPUT_NAMES: frozenset[str] = frozenset(["a", "b", "c", "d", "x", "y", "z", "w", "bias", "gate", "up"])

#: Appended to an input name that would collide, to make its identifier: `out` -> `out_arg`.
MANGLE_SUFFIX = "_arg"


def _is_plain(name: str) -> bool:
    """A name C++ and Python take as a local as it is: no leading or trailing '_', no '__'."""
    return not (name.startswith("_") or name.endswith("_") or "__" in name)


def input_identifiers(
    names: tuple[str, ...], op_name: str, package: str, namespace: str, *, python_names: frozenset[str] = frozenset(),
) -> dict[str, str]:
    """Map each input and weight name of one op to the identifier the generated code uses for it.

    A name stays itself unless it, or a local the templates derive from it (``{{ x }}_contig``),
    collides with an identifier of the template files that render input names in code
    (:func:`kernelgen.template_scan.op_template_names`), a C macro, a name derived from the op, package or namespace, or
    another input's identifiers; then it becomes ``<name>_arg`` (``<name>_arg2``, ...). Names the templates use
    only in ways that cannot rebind an input (:data:`SAFE_INPUT_NAMES`) stay themselves. The result
    is deterministic (declaration order decides between two inputs), so re-rendering a package
    gives the same identifiers.
    """
    used = op_template_names(frozenset(["matmul"]))
    # Only the files that render input names in code can have an input collide with their own names
    # (an #include or {% include %} shares its includer's scope and counts as rendering them too).
    in_scope = {name for name, files in used.identifiers.items() if any(file in used.input_files for file in files)}
    reserved = (in_scope - SAFE_INPUT_NAMES) | C_MACRO_NAMES | EMITTED_NAMES
    reserved |= python_names | {package, namespace}
    reserved |= {f"{prefix}{op_name}{suffix}" for prefix, suffix in used.op_affixes | {("", "")}}
    affixes = sorted(used.affixes)

    def forms(ident: str) -> set[str]:
        return {ident} | {f"{prefix}{ident}{suffix}" for prefix, suffix in affixes}

    claimed = set(names)  # a mangled identifier never takes another input's own name
    taken: set[str] = set()
    result: dict[str, str] = {}
    for name in names:
        candidates = [name] if _is_plain(name) else []
        stem = re.sub(r"_+", "_", name).strip("_") or "v"
        candidates += [f"{stem}{MANGLE_SUFFIX}"] + [f"{stem}{MANGLE_SUFFIX}{k}" for k in range(2, 2 + len(names) + 1)]
        for ident in candidates:
            derived = forms(ident)
            if derived & (reserved | taken) or (ident != name and ident in claimed):
                continue
            if any(form in claimed and form != name for form in derived - {ident}) and ident == name:
                continue  # `a` beside an input named `a_contig`: the later one keeps its name
            result[name] = ident
            taken |= derived
            break
        else:  # pragma: no cover - len(names) + 2 candidates cannot all be taken
            raise AssertionError(f"no identifier for input {name!r}")
    return result


def cpp_namespace(op_name: str) -> str:
    """The C++ namespace an op's code lives in: the op name, unless that is a C/CUDA library name, a
    macro or an identifier the generated C++ uses at global scope (``norm``, ``std``, ``cutlass``),
    in which case ``<op>_op``."""
    used = op_template_names()
    cpp = {name for name, files in used.identifiers.items()
           if any(file.endswith(tuple(f"{suffix}.jinja" for suffix in C_SUFFIXES)) for file in files)}
    clashes = C_AND_CUDA_NAMES | C_MACRO_NAMES | EMITTED_NAMES | CPP_LIBRARY_NAMESPACES | cpp
    plain = _is_plain(op_name) and not op_name.startswith(("aoti_", "cuda", "cublas", "nv"))
    return op_name if op_name not in clashes and plain else f"{op_name.strip('_')}_op"
