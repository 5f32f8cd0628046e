"""OpSpec: the validated, immutable description of one op.

Everything that reaches a template passes through here first, so that a name which is not a
safe Python *and* C++ identifier, or an expression outside the whitelist, is refused before a
single file is written.
"""

from __future__ import annotations

import keyword
import re
import sys
from dataclasses import dataclass, field

from . import expr as expr_mod
from .errors import InvalidNameError, SpecError

KINDS: dict[str, str] = {
    "elementwise": (
        "out = f(x1, ..., xN) for N same-shape tensors and a scalar expression f; "
        "a vectorized CUDA kernel, a parallel CPU loop, a backward derived from the reference"
    ),
    "matmul": (
        "C = A @ B for (M, K) @ (K, N), optionally batched; a shared-memory tiled CUDA kernel "
        "with tensor cores for float16/bfloat16, a blocked CPU loop, the analytic backward"
    ),
}

#: Canonical dtype names, in the order the generated dispatch lists them.
DTYPES: tuple[str, ...] = ("float32", "float64", "float16", "bfloat16")
_DTYPE_ALIASES = {
    "float": "float32", "fp32": "float32", "f32": "float32", "float32": "float32",
    "double": "float64", "fp64": "float64", "f64": "float64", "float64": "float64",
    "half": "float16", "fp16": "float16", "f16": "float16", "float16": "float16",
    "bf16": "bfloat16", "bfloat16": "bfloat16",
}

#: Built for Ampere (8.0) and Hopper (9.0) as machine code, plus PTX that newer GPUs JIT-compile.
DEFAULT_ARCH_LIST = "8.0;9.0+PTX"

# C++ keywords and alternative tokens, plus names the C++ standard library or CUDA make awkward.
CPP_KEYWORDS = frozenset(
    ["alignas", "alignof", "and", "and_eq", "asm", "auto", "bitand", "bitor", "bool", "break", "case", "catch", "char", "char8_t", "char16_t", "char32_t", "class", "compl", "concept", "const", "consteval", "constexpr", "constinit", "const_cast", "continue", "co_await", "co_return", "co_yield", "decltype", "default", "delete", "do", "double", "dynamic_cast", "else", "enum", "explicit", "export", "extern", "false", "float", "for", "friend", "goto", "if", "inline", "int", "long", "mutable", "namespace", "new", "noexcept", "not", "not_eq", "nullptr", "operator", "or", "or_eq", "private", "protected", "public", "register", "reinterpret_cast", "requires", "return", "short", "signed", "sizeof", "static", "static_assert", "static_cast", "struct", "switch", "template", "this", "thread_local", "throw", "true", "try", "typedef", "typeid", "typename", "union", "unsigned", "using", "virtual", "void", "volatile", "wchar_t", "while", "xor", "xor_eq", "main"]
)

# Names that the generated code itself uses, or that would shadow a module it imports.
RESERVED = frozenset(
    ["torch", "std", "at", "c10", "acc_t", "scalar_t", "opmath", "n", "i", "idx", "out", "ctx", "grad", "grad_out", "self", "reference", "kernelgen", "setuptools", "numpy", "triton", "pytest", "math", "os", "sys", "ops", "tests", "benchmarks", "csrc", "cuda", "build", "dist"]
)

_IDENT = re.compile(r"[a-z][a-z0-9_]*\Z")
_ARCH = re.compile(r"(\d+)\.(\d+)(a|f)?(\+PTX)?\Z")


def normalize_op_name(raw: str) -> str:
    """Validate ``raw`` and return the identifier form (hyphens become underscores)."""
    return _check_identifier(raw, what="op name", param="op_name", allow_hyphens=True)


def _check_identifier(raw: str, *, what: str, param: str, allow_hyphens: bool = False) -> str:
    if raw is None or raw.strip() == "":
        raise InvalidNameError(f"the {what} is empty", param)
    if raw != raw.strip():
        raise InvalidNameError(f"the {what} {raw!r} has leading or trailing spaces", param)
    if "/" in raw or "\\" in raw or ".." in raw or raw in (".", "~") or raw.startswith("~"):
        raise InvalidNameError(
            f"the {what} {raw!r} looks like a path; give a bare name and use --output for the directory",
            param,
        )
    name = raw.replace("-", "_") if allow_hyphens else raw
    if name[0].isdigit():
        raise InvalidNameError(f"the {what} {raw!r} starts with a digit; identifiers cannot", param)
    if not name.isidentifier() or not name.isascii():
        raise InvalidNameError(
            f"the {what} {raw!r} is not an identifier (use lowercase ASCII letters, digits"
            f"{', hyphens' if allow_hyphens else ''} and underscores)",
            param,
        )
    if keyword.iskeyword(name) or keyword.issoftkeyword(name) or name in CPP_KEYWORDS:
        raise InvalidNameError(f"the {what} {raw!r} is a C++ or Python keyword", param)
    if name.startswith("_") or name.endswith("_") or "__" in name:
        raise InvalidNameError(
            f"the {what} {raw!r} starts or ends with '_' or contains '__' "
            "(reserved for the compiler and the generated code)",
            param,
        )
    if not _IDENT.match(name):
        raise InvalidNameError(
            f"the {what} {raw!r} must be lowercase (letters, digits and underscores, "
            "starting with a letter)",
            param,
        )
    if name in RESERVED or name in sys.stdlib_module_names or name in expr_mod.FUNCTIONS:
        raise InvalidNameError(
            f"the {what} {raw!r} is reserved: it would shadow a module or a name the generated "
            "code uses",
            param,
        )
    if len(name) > 64:
        raise InvalidNameError(f"the {what} {raw!r} is longer than 64 characters", param)
    return name


def parse_dtypes(value: str | list[str] | tuple[str, ...]) -> tuple[str, ...]:
    """Parse ``float32,bf16`` (or a list) into canonical names, in canonical order."""
    items = value.split(",") if isinstance(value, str) else list(value)
    chosen: set[str] = set()
    for item in items:
        key = item.strip().lower()
        if not key:
            continue
        if key not in _DTYPE_ALIASES:
            raise SpecError(
                f"unsupported dtype {item.strip()!r}; choose from {', '.join(DTYPES)}", "dtypes"
            )
        chosen.add(_DTYPE_ALIASES[key])
    if not chosen:
        raise SpecError("--dtypes is empty; choose from " + ", ".join(DTYPES), "dtypes")
    return tuple(d for d in DTYPES if d in chosen)


def parse_arch_list(value: str) -> str:
    """Validate a TORCH_CUDA_ARCH_LIST-style string and return it normalized with ';'."""
    items = [item for item in re.split(r"[;\s,]+", value.strip()) if item]
    if not items:
        raise SpecError("--arch-list is empty; for example '8.0;9.0+PTX'", "arch_list")
    for item in items:
        match = _ARCH.match(item)
        if not match:
            raise SpecError(
                f"bad --arch-list entry {item!r}; expected entries like 8.0, 9.0a or 9.0+PTX",
                "arch_list",
            )
        if (int(match.group(1)), int(match.group(2))) < (7, 5):
            raise SpecError(
                f"--arch-list entry {item!r} is older than 7.5, which CUDA 13's nvcc cannot target",
                "arch_list",
            )
    return ";".join(items)


def parse_inputs(value: str | list[str] | tuple[str, ...]) -> tuple[str, ...]:
    items = value.split(",") if isinstance(value, str) else list(value)
    names = tuple(item.strip() for item in items)
    if not names or names == ("",):
        raise SpecError("--inputs is empty; give one or more names, such as 'a,b,c'", "inputs")
    seen: set[str] = set()
    for name in names:
        _check_identifier(name, what="input name", param="inputs")
        if name in seen:
            raise SpecError(f"input {name!r} is declared twice in --inputs", "inputs")
        seen.add(name)
    if len(names) > 16:
        raise SpecError("--inputs declares more than 16 tensors", "inputs")
    return names


@dataclass(frozen=True)
class OpSpec:
    """A validated op description. Build it with :meth:`create`, which checks every field."""

    name: str  # as the user typed it (may contain hyphens): directory and distribution name
    op_name: str  # identifier: Python package, C++ namespace and function names
    kind: str
    namespace: str
    dtypes: tuple[str, ...]
    arch_list: str
    inputs: tuple[str, ...] = ()
    expr: str = ""
    parsed: expr_mod.ParsedExpr | None = field(default=None, compare=False, repr=False)

    @classmethod
    def create(
        cls,
        name: str,
        *,
        kind: str = "elementwise",
        inputs: str | list[str] | tuple[str, ...] | None = None,
        expr: str | None = None,
        dtypes: str | list[str] | tuple[str, ...] = DTYPES,
        arch_list: str = DEFAULT_ARCH_LIST,
        namespace: str | None = None,
    ) -> OpSpec:
        op_name = normalize_op_name(name)
        if kind not in KINDS:
            raise SpecError(f"unknown kind {kind!r}; choose from {', '.join(KINDS)}", "kind")
        ns = op_name if namespace in (None, "") else _check_identifier(
            namespace, what="namespace", param="namespace"
        )
        dtype_tuple = parse_dtypes(dtypes)
        arch = parse_arch_list(arch_list)
        if kind == "elementwise":
            input_names = parse_inputs(inputs if inputs is not None else "x")
            if op_name in input_names:
                raise SpecError(f"input {op_name!r} has the same name as the op", "inputs")
            if expr is None:
                expr = " + ".join(input_names)
            parsed = expr_mod.parse(expr, input_names)
            return cls(name, op_name, kind, ns, dtype_tuple, arch, input_names, parsed.source, parsed)
        if inputs not in (None, "", ()) or expr not in (None, ""):
            raise SpecError(f"--inputs and --expr are only for --kind elementwise, not {kind}", "kind")
        return cls(name, op_name, kind, ns, dtype_tuple, arch)

    @classmethod
    def from_answers(cls, data: dict[str, object]) -> OpSpec:
        """Rebuild a spec from a recorded answers mapping (.copier-answers.yml)."""
        def text(key: str) -> str | None:
            value = data.get(key)
            return None if value is None else str(value)

        dtypes = data.get("dtypes") or list(DTYPES)
        return cls.create(
            str(data["name"]),
            kind=str(data.get("kind", "elementwise")),
            inputs=data.get("inputs") if data.get("kind", "elementwise") == "elementwise" else None,  # type: ignore[arg-type]
            expr=text("expr") if data.get("kind", "elementwise") == "elementwise" else None,
            dtypes=dtypes,  # type: ignore[arg-type]
            arch_list=text("arch_list") or DEFAULT_ARCH_LIST,
            namespace=text("namespace"),
        )

    def answers(self) -> dict[str, object]:
        """The copier answers that reproduce this spec (recorded in .copier-answers.yml)."""
        data: dict[str, object] = {
            "name": self.name,
            "op_name": self.op_name,
            "kind": self.kind,
            "namespace": self.namespace,
            "dtypes": list(self.dtypes),
            "arch_list": self.arch_list,
        }
        if self.kind == "elementwise":
            data["inputs"] = list(self.inputs)
            data["expr"] = self.expr
        return data
