"""OpSpec: the validated, immutable description of one op.

Everything that reaches a template passes through here first, so that a name which is not a
safe Python *and* C++ identifier, or an expression outside the whitelist, is refused before a
single file is written.
"""

from __future__ import annotations

import keyword
import re
import sys
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from typing import Any

from . import diff
from .cost import HEAVY_EPILOGUE_COST, distinct_math_cost, heavy_epilogue
from .errors import AnswersError, ExprError, InvalidNameError, SpecError, clip, did_you_mean
from .expr import ParsedExpr
from .expr import parse as parse_expr
from .names import cpp_namespace as cpp_namespace_of
from .names import input_identifiers
from .nodes import FUNCTIONS, REDUCTIONS
from .reserved import C_MACRO_NAMES, CPP_KEYWORDS, MODULE_NAMES, installed_module
from .template_scan import op_module_names
from .torch_namespaces import torch_namespaces

KINDS: dict[str, str] = {
    "elementwise": (
        "out = f(x1, ..., xN) for N same-shape tensors and a scalar expression f; "
        "a vectorized CUDA kernel, a parallel CPU loop, a backward derived from the reference"
    ),
    "rowwise": (
        "out = f(rows of x1, ..., xN; weights) for same-shape (..., C) tensors, 1-D (C,) weights and an "
        "expression with row reductions (sum, mean, max, min): softmax, RMSNorm, LayerNorm, ...; one "
        "pass over memory with the row held on chip, a CPU loop, a backward derived from the reference"
    ),
    "matmul": (
        "C = A @ B for (M, K) @ (K, N), optionally batched, with an optional fused epilogue over the "
        "accumulator (--epilogue 'acc + bias' with --bias); a shared-memory tiled CUDA kernel with tensor "
        "cores for float16/bfloat16, a blocked CPU loop, the analytic backward (a fused epilogue: its generated derivative, then two GEMMs)"
    ),
}

#: Where an op's kernel comes from: CUDA C++ compiled into the package's _C, or Triton (Python).
BACKENDS: tuple[str, ...] = ("cuda", "triton")
#: How an op's backward is made: "fused", a backward op kernelgen generates from the expression where it
#: has one for the op's kind, backend and ABI (see OpSpec.fused_backward), else the vjp stub; "vjp", always
#: the stub (ops/<op>.py differentiates reference() with torch.func.vjp; no backward op is generated).
BACKWARDS: tuple[str, ...] = ("fused", "vjp")
DEFAULT_BACKWARD = "fused"
#: The template version from which kernelgen generates each kind's backward. An op recorded by an older
#: version, with no `backward` answer, had the vjp of its reference, which follows any edit of its
#: formula; a backward generated now from the recorded expression would not. So reading such a record
#: (`kernelgen update`, `new --answers`) keeps the stub: ``backward: vjp``.
FUSED_BACKWARD_SINCE: dict[tuple[str, str], int] = {
    ("elementwise", "cuda"): 13, ("rowwise", "cuda"): 14, ("elementwise", "triton"): 15, ("rowwise", "triton"): 15,
    ("matmul", "cuda"): 17,
}
#: How each ABI spells what the C++ templates name, handed to every template as ``spell``: the prefix of
#: the CUDA error-check macros (<prefix>_CHECK, <prefix>_KERNEL_LAUNCH_CHECK), the op-math type of a
#: dtype, the library macro the extension registers with, and each dtype's C++ element type.
ABI_SPELLINGS: dict[str, dict[str, Any]] = {
    "stable": {"cuda": "STD_CUDA", "opmath_type": "opmath::opmath_type", "library": "STABLE_TORCH_LIBRARY",
               "c": {"float32": "float", "float64": "double", "float16": "torch::headeronly::Half",
                     "bfloat16": "torch::headeronly::BFloat16"}},
    "full": {"cuda": "C10_CUDA", "opmath_type": "at::opmath_type", "library": "TORCH_LIBRARY",
             "c": {"float32": "float", "float64": "double", "float16": "at::Half", "bfloat16": "at::BFloat16"}},
}
#: The kinds the Triton backend generates.
TRITON_KINDS: tuple[str, ...] = ("elementwise", "rowwise")
#: The kinds whose ops take user-named inputs and an expression.
EXPR_KINDS: tuple[str, ...] = ("elementwise", "rowwise")
#: The kinds whose C++ exists on the stable ABI only (new kinds start there; see ABIS).
STABLE_ONLY_KINDS: tuple[str, ...] = ("rowwise",)
#: The expression a rowwise op of one input gets when --expr is not given: a softmax.
DEFAULT_ROWWISE_EXPR = "exp(x - max(x)) / sum(exp(x - max(x)))"
#: Known rowwise expressions, shown by `kernelgen list` and the README (inputs, weights, expression).
ROWWISE_EXAMPLES: tuple[tuple[str, str, str, str], ...] = (
    ("softmax", "x", "", "exp(x - max(x)) / sum(exp(x - max(x)))"),
    ("log-softmax", "x", "", "x - max(x) - log(sum(exp(x - max(x))))"),
    ("RMSNorm", "x", "w", "x * rsqrt(mean(x * x) + 1e-6) * w"),
    ("LayerNorm", "x", "w,b", "(x - mean(x)) * rsqrt(mean((x - mean(x)) ** 2) + 1e-5) * w + b"),
)

#: Which LibTorch ABI the package's C++ is written against (one per package: one build).
#: stable: torch/csrc/stable and torch/headeronly only; the binary (cp310-abi3) loads on every torch
#:         at least as new as its target version, and needs no rebuild when torch is upgraded.
#: full:   ATen and c10 (at::Tensor, TORCH_LIBRARY, ...): the whole C++ API, tied to the torch it
#:         was built with. Packages recorded without an `abi` (template versions 1 to 3) are full.
ABIS: tuple[str, ...] = ("stable", "full")
DEFAULT_ABI = "stable"
#: The ABI of a package whose answers file records none (made before `--abi` existed).
LEGACY_ABI = "full"

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

# Names an op, package or namespace cannot take: the modules the generated code imports and the
# directories at the root of a generated package (an op name is also the default package name).
# C++ and C library names are not here: an op's C++ namespace is mapped to a safe one
# (:func:`kernelgen.names.cpp_namespace`), and input names are mapped in all generated code.
RESERVED = frozenset(
    ["torch", "reference", "kernelgen", "setuptools", "numpy", "triton", "pytest", "math", "os", "sys", "ops",
     "tests", "benchmarks", "csrc", "cuda", "build", "dist"]
)

_IDENT = re.compile(r"[a-z][a-z0-9_]*\Z", re.ASCII)
# major.minor, at most 3 ASCII digits each ([0-9], not \d, which matches '９')
_ARCH = re.compile(r"([0-9]{1,3})\.([0-9]{1,3})(a|f)?(\+PTX)?", re.ASCII)
MAX_NAME_LENGTH = 64
MAX_INPUTS = 16
MAX_ARCH_ENTRIES = 32


def _show(value: object, limit: int = 40) -> str:
    """``value`` for a one-line message: ASCII only (any terminal prints it), at most ``limit``
    characters of it (a 100k-character argument must not flood the terminal)."""
    text = value if isinstance(value, str) else repr(value)
    return ascii(text if len(text) <= limit else text[: limit - 3] + "...")


def normalize_op_name(raw: str, *, check_installed: bool = False) -> str:
    """Validate ``raw`` and return the identifier form (hyphens become underscores).

    An op name becomes a Python module and function (ops/<op>.py) and, by default, the package name
    too: besides the identifier rules it must not shadow a module torch or kernelgen's test stack
    imports, nor a name the op's module binds (``tl``, ``wrap_triton``, ``reference``). Its C++
    namespace is the name itself or a safe stand-in (:func:`kernelgen.names.cpp_namespace`). With ``check_installed`` (for a *new* package), a
    module importable in this environment is refused too; off by default because a package the
    user already installed is importable under its own name (``kernelgen add`` must accept it).
    """
    name = _check_identifier(raw, what="op name", param="op_name", allow_hyphens=True, c_names=False)
    if name in op_module_names():
        raise InvalidNameError(
            f"the op name {_show(raw)} is a name the op's Python module ops/{name}.py binds itself (an import "
            "or a helper of the generated code); the op's public function would replace it. Choose another name",
            "op_name")
    return _check_module_name(name, raw, what="op name", param="op_name", check_installed=check_installed)


def normalize_package_name(raw: str, *, check_installed: bool = False) -> str:
    """Like :func:`normalize_op_name` for a package name, which is a Python package only (never a
    C++ identifier), so C and CUDA library names such as ``gamma`` are fine."""
    name = _check_identifier(raw, what="package name", param="name", allow_hyphens=True, c_names=False)
    return _check_module_name(name, raw, what="package name", param="name", check_installed=check_installed)


def _check_module_name(name: str, raw: str, *, what: str, param: str, check_installed: bool) -> str:
    if name in MODULE_NAMES:
        raise InvalidNameError(
            f"the {what} {_show(raw)} is reserved: it would shadow the module {name!r} that torch, "
            "kernelgen or the generated tests import",
            param,
        )
    if check_installed:
        where = installed_module(name)
        if where is not None:
            raise InvalidNameError(
                f"the {what} {_show(raw)} would shadow the installed module {name!r} ({_show(where, 80)}); "
                "choose another name",
                param,
            )
    return name


def _check_identifier(
    raw: str, *, what: str, param: str, allow_hyphens: bool = False, c_names: bool = True
) -> str:
    if raw is not None and not isinstance(raw, str):
        raise InvalidNameError(f"the {what} must be a string, not {type(raw).__name__}", param)
    if raw is None or raw.strip() == "":
        raise InvalidNameError(f"the {what} is empty", param)
    if len(raw) > MAX_NAME_LENGTH:
        raise InvalidNameError(
            f"the {what} {_show(raw)} is longer than {MAX_NAME_LENGTH} characters ({len(raw)})", param
        )
    if raw != raw.strip():
        raise InvalidNameError(f"the {what} {_show(raw)} has leading or trailing spaces", param)
    if "/" in raw or "\\" in raw or ".." in raw or raw in (".", "~") or raw.startswith("~"):
        raise InvalidNameError(
            f"the {what} {_show(raw)} looks like a path; give a bare name and use --output for the directory",
            param,
        )
    name = raw.replace("-", "_") if allow_hyphens else raw
    if name[0].isdigit():
        raise InvalidNameError(f"the {what} {_show(raw)} starts with a digit; identifiers cannot", param)
    if not name.isidentifier() or not name.isascii():
        raise InvalidNameError(
            f"the {what} {_show(raw)} is not an identifier (use lowercase ASCII letters, digits"
            f"{', hyphens' if allow_hyphens else ''} and underscores)",
            param,
        )
    if keyword.iskeyword(name) or keyword.issoftkeyword(name) or name in CPP_KEYWORDS:
        raise InvalidNameError(f"the {what} {_show(raw)} is a C++ or Python keyword", param)
    if name.startswith("_") or name.endswith("_") or "__" in name:
        raise InvalidNameError(
            f"the {what} {_show(raw)} starts or ends with '_' or contains '__' "
            "(reserved for the compiler and the generated code)",
            param,
        )
    if not _IDENT.match(name):
        raise InvalidNameError(
            f"the {what} {_show(raw)} must be lowercase (letters, digits and underscores, "
            "starting with a letter)",
            param,
        )
    if name in RESERVED or name in sys.stdlib_module_names:
        raise InvalidNameError(
            f"the {what} {_show(raw)} is reserved: it would shadow a module or a directory of the generated "
            "package",
            param,
        )
    if c_names and name in C_MACRO_NAMES:
        raise InvalidNameError(
            f"the {what} {_show(raw)} is a C macro or a name the compiler predefines; the generated C++ "
            "passes it to macros, which would expand it. Choose another name",
            param,
        )
    return name


def _unknown(what: str, value: object, choices: Iterable[str], spellings: Iterable[str] = ()) -> str:
    """``unknown kind 'elementwis'; did you mean 'elementwise'? (choose from ...)``: the choice, or
    accepted spelling, closest to ``value`` when one is close, and the choices."""
    close = did_you_mean(str(value).lower(), (*choices, *spellings))
    listed = ", ".join(choices)
    return f"{what} {_show(value)}" + (f"{close} (choose from {listed})" if close else f"; choose from {listed}")


def parse_dtypes(value: str | list[str] | tuple[str, ...]) -> tuple[str, ...]:
    """Parse ``float32,bf16`` (or a list) into canonical names, in canonical order.

    Empty is an error, and so is an empty item (``fp32,,bf16``, a trailing comma): a typo, not a
    request for the defaults.
    """
    if isinstance(value, str):
        if not value.strip():
            raise SpecError("--dtypes is empty; choose from " + ", ".join(DTYPES), "dtypes")
        items: list[object] = list(value.split(","))
    elif isinstance(value, (list, tuple)):
        items = list(value)
    else:
        raise SpecError(f"--dtypes must be a comma-separated string, not {type(value).__name__}", "dtypes")
    chosen: set[str] = set()
    for index, item in enumerate(items):
        if not isinstance(item, str):
            raise SpecError(f"--dtypes item {index + 1} is a {type(item).__name__}, not a dtype name", "dtypes")
        key = item.strip().lower()
        if not key:
            raise SpecError(
                f"--dtypes has an empty item (item {index + 1}); separate dtypes with single commas, "
                "e.g. float32,bfloat16",
                "dtypes",
            )
        if key not in _DTYPE_ALIASES:
            raise SpecError(_unknown("unsupported dtype", item.strip(), DTYPES, _DTYPE_ALIASES), "dtypes")
        chosen.add(_DTYPE_ALIASES[key])
    if not chosen:
        raise SpecError("--dtypes is empty; choose from " + ", ".join(DTYPES), "dtypes")
    return tuple(d for d in DTYPES if d in chosen)


def parse_arch_list(value: str) -> str:
    """Validate a TORCH_CUDA_ARCH_LIST-style string and return it normalized with ';'."""
    if not isinstance(value, str):
        raise SpecError(f"--arch-list must be a string, not {type(value).__name__}", "arch_list")
    items = [item for item in re.split(r"[;\s,]+", value.strip(), flags=re.ASCII) if item]
    if not items:
        raise SpecError("--arch-list is empty; for example '8.0;9.0+PTX'", "arch_list")
    if len(items) > MAX_ARCH_ENTRIES:
        raise SpecError(f"--arch-list has {len(items)} entries; at most {MAX_ARCH_ENTRIES}", "arch_list")
    for item in items:
        match = _ARCH.fullmatch(item)
        if not match:
            raise SpecError(
                f"bad --arch-list entry {_show(item)}; expected entries like 8.0, 9.0a or 9.0+PTX "
                "(ASCII digits, at most 3 per number)",
                "arch_list",
            )
        if (int(match.group(1)), int(match.group(2))) < (7, 5):
            raise SpecError(
                f"--arch-list entry {_show(item)} is older than 7.5, which CUDA 13's nvcc cannot target",
                "arch_list",
            )
    return ";".join(items)


def _parse_names(value: object, *, flag: str, what: str, param: str) -> tuple[str, ...]:
    """Parse ``a,b,c`` (or a list) into distinct safe identifiers; ``flag`` names the option."""
    if isinstance(value, str):
        items: list[object] = list(value.split(",", MAX_INPUTS + 1))
    elif isinstance(value, (list, tuple)):
        items = list(value)
    else:
        raise SpecError(f"{flag} must be a comma-separated string, not {type(value).__name__}", param)
    if len(items) > MAX_INPUTS:
        raise SpecError(f"{flag} declares more than {MAX_INPUTS} tensors", param)
    names: list[str] = []
    for item in items:
        if not isinstance(item, str):
            raise SpecError(f"{'an' if what[0] in 'aeiou' else 'a'} {what} name must be a string, not "
                            f"{type(item).__name__}", param)
        name = check_input_name(item.strip(), what=f"{what} name", param=param)
        if name in names:
            raise SpecError(f"{what} {name!r} is declared twice in {flag}", param)
        names.append(name)
    return tuple(names)


def parse_inputs(value: str | list[str] | tuple[str, ...]) -> tuple[str, ...]:
    """Parse ``a,b,c`` (or a list) into input names: any lowercase identifier of up to
    :data:`MAX_INPUT_NAME_LENGTH` characters except keywords and the expression grammar's names (see
    :func:`check_input_name`). The generated code maps a name that would collide with one of its own
    identifiers to a safe one (:func:`kernelgen.names.input_identifiers`)."""
    if not isinstance(value, (str, list, tuple)):
        raise SpecError(f"--inputs must be a comma-separated string, not {type(value).__name__}", "inputs")
    if not value or (isinstance(value, str) and not value.strip()) or (
        len(value) == 1 and isinstance(value[0], str) and not value[0].strip()
    ):
        raise SpecError("--inputs is empty; give one or more names, such as 'a,b,c'", "inputs")
    return _parse_names(value, flag="--inputs", what="input", param="inputs")


def parse_weights(value: str | list[str] | tuple[str, ...] | None, inputs: tuple[str, ...]) -> tuple[str, ...]:
    """Parse ``w,b`` (or a list) into the names of a rowwise op's 1-D weights (may be empty)."""
    if value is None or (isinstance(value, (str, list, tuple)) and not (value.strip() if isinstance(value, str) else value)):
        return ()
    names = _parse_names(value, flag="--weights", what="weight", param="weights")
    for name in names:
        if name in inputs:
            raise SpecError(f"{name!r} is declared both in --inputs and in --weights", "weights")
    return names


#: The longest input or weight name.
MAX_INPUT_NAME_LENGTH = 32
_INPUT_NAME = re.compile(r"[a-z][a-z0-9_]*\Z", re.ASCII)


def check_input_name(raw: object, *, what: str = "input name", param: str = "inputs") -> str:
    """Validate one input or weight name: a lowercase identifier (ASCII letters, digits and '_',
    starting with a letter) of at most 32 characters that is not a Python or C++ keyword nor a
    function or reduction of the expression grammar. Nothing else is refused: a name the generated
    code uses itself is mapped to a safe identifier there, and the public function keeps it."""
    if not isinstance(raw, str):
        raise InvalidNameError(f"the {what} must be a string, not {type(raw).__name__}", param)
    if raw.strip() == "":
        raise InvalidNameError(f"the {what} is empty", param)
    if raw != raw.strip():
        raise InvalidNameError(f"the {what} {_show(raw)} has leading or trailing spaces", param)
    if len(raw) > MAX_INPUT_NAME_LENGTH:
        raise InvalidNameError(
            f"the {what} {_show(raw)} is longer than {MAX_INPUT_NAME_LENGTH} characters ({len(raw)})", param)
    if not _INPUT_NAME.match(raw):
        raise InvalidNameError(
            f"the {what} {_show(raw)} must be a lowercase identifier (ASCII letters, digits and underscores, "
            "starting with a letter)", param)
    if keyword.iskeyword(raw) or raw in CPP_KEYWORDS - {"main"}:
        raise InvalidNameError(f"the {what} {_show(raw)} is a {'Python' if keyword.iskeyword(raw) else 'C++'} "
                               "keyword", param)
    if raw in FUNCTIONS or raw in REDUCTIONS:
        raise InvalidNameError(
            f"the {what} {_show(raw)} is a function of the expression grammar ({raw}(...)); choose another name",
            param)
    return raw


def parse_abi(value: object) -> str:
    """Validate an ABI name (``stable`` or ``full``)."""
    if not isinstance(value, str) or value not in ABIS:
        raise SpecError(f"unknown ABI {_show(value)}; choose from {', '.join(ABIS)}", "abi")
    return value


def check_namespace(ns: str, *, derived_from_op: bool, source: str = "op name") -> str:
    """Validate the effective torch.ops namespace ``ns`` and return it.

    Besides the identifier rules (which refuse a leading '_'), ``ns`` must not be a namespace
    PyTorch owns: defining an op in one (torch.ops.sparse, torch.ops.aten, ...) aborts Python on
    import. Those are the recorded ones (:mod:`kernelgen.torch_namespaces`) plus, unless
    KERNELGEN_NO_TORCH_QUERY=1, whatever the installed torch registers. ``derived_from_op`` says
    the namespace was not given but taken from the op (or package) name: the error then names the
    op (param "op_name") rather than --namespace; ``source`` says which name it was taken from
    ("op name", or "package name" for `kernelgen new PKG --op OP`).
    """
    param = "op_name" if derived_from_op else "namespace"
    what = f"{source} (the default namespace)" if derived_from_op else "namespace"
    name = _check_identifier(ns, what=what, param=param)
    if name in torch_namespaces():
        fix = "pick your own with --namespace <team>, e.g. --namespace myteam"
        if derived_from_op:
            raise SpecError(
                f"the {source} {name!r} would also be the torch.ops namespace, and {name!r} is a namespace "
                f"PyTorch owns (torch.ops.{name}; importing the op would abort Python); {fix}",
                param,
            )
        raise SpecError(
            f"{name!r} is a namespace PyTorch owns (torch.ops.{name}; importing the op would abort "
            f"Python); {fix}",
            param,
        )
    return name


@dataclass(frozen=True)
class OpSpec:
    """A validated op description. Build it with :meth:`create`, which checks every field.

    ``namespace``, ``arch_list`` and ``abi`` are the values of the package the op is created for (a
    new package takes them from the op's options); :class:`PackageSpec` holds them for every op.
    """

    name: str  # as the user typed it (may contain hyphens)
    op_name: str  # identifier: module, C++ namespace, function and torch.ops names
    kind: str
    namespace: str
    dtypes: tuple[str, ...]
    arch_list: str
    inputs: tuple[str, ...] = ()
    expr: str = ""  # the canonical expression, re-printed from the parse tree (never raw user text)
    parsed: ParsedExpr | None = field(default=None, compare=False, repr=False)
    backend: str = "cuda"  # "cuda" (C++/CUDA, compiled into the package's _C) or "triton" (Python only)
    abi: str = DEFAULT_ABI  # the package's: "stable" (LibTorch stable ABI) or "full" (ATen); see ABIS
    weights: tuple[str, ...] = ()  # rowwise: the 1-D (C,) tensors broadcast over the rows
    epilogue: str = "acc"  # matmul: the canonical expression applied to each element of A @ B
    bias: bool = False  # matmul: the op takes a 1-D bias of N, which the epilogue reads as `bias`
    backward: str = DEFAULT_BACKWARD  # "fused" or "vjp" (see BACKWARDS)
    epilogue_parsed: ParsedExpr | None = field(default=None, compare=False, repr=False)

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
        backend: str = "cuda",
        abi: str = DEFAULT_ABI,
        weights: str | list[str] | tuple[str, ...] | None = None,
        epilogue: str | None = None,
        bias: bool = False,
        backward: str = DEFAULT_BACKWARD,
    ) -> OpSpec:
        op_name = normalize_op_name(name)
        abi = parse_abi(abi)
        if kind not in KINDS:
            raise SpecError(_unknown("unknown kind", kind, KINDS), "kind")
        if backend not in BACKENDS:
            raise SpecError(_unknown("unknown backend", backend, BACKENDS), "backend")
        if backward not in BACKWARDS:
            raise SpecError(_unknown("unknown backward", backward, BACKWARDS), "backward")
        if backend == "triton" and kind not in TRITON_KINDS:
            raise SpecError(
                f"the Triton backend generates {', '.join(TRITON_KINDS)} ops, not {kind}: a {kind} op is "
                "generated in CUDA C++ only (use --backend cuda)", "backend")
        if kind in STABLE_ONLY_KINDS and backend == "cuda" and abi != "stable":
            raise SpecError(
                f"the {kind} kind's C++ is written for the stable ABI only (new kinds start there); this "
                f"package is on the {abi} ABI: use --backend triton, or put the op in a package made "
                "with --abi stable", "abi")
        if weights and kind != "rowwise":
            raise SpecError(f"--weights is only for --kind rowwise, not {kind}", "weights")
        if (epilogue is not None or bias) and kind != "matmul":
            raise SpecError(f"--epilogue and --bias are only for --kind matmul, not {kind}",
                            "epilogue" if epilogue is not None else "bias")
        if namespace is None:
            ns = check_namespace(op_name, derived_from_op=True)
        else:
            ns = check_namespace(
                _check_identifier(namespace, what="namespace", param="namespace"), derived_from_op=False
            )
        dtype_tuple = parse_dtypes(dtypes)
        arch = parse_arch_list(arch_list)
        if kind == "elementwise":
            input_names = parse_inputs(inputs if inputs is not None else "x")
            if expr is None:
                expr = " + ".join(input_names)
            parsed = parse_expr(expr, input_names)
            return cls(name, op_name, kind, ns, dtype_tuple, arch, input_names, parsed.source, parsed, backend, abi,
                       backward=backward)
        if kind == "rowwise":
            input_names = parse_inputs(inputs if inputs is not None else "x")
            weight_names = parse_weights(weights, input_names)
            if expr is None:
                if input_names != ("x",) or weight_names:
                    raise SpecError(
                        "--kind rowwise needs --expr (the default, a softmax, is for one input named x); "
                        "for example --expr 'x * rsqrt(mean(x * x) + 1e-6) * w' (see `kernelgen list`)", "expr")
                expr = DEFAULT_ROWWISE_EXPR
            parsed = parse_expr(expr, input_names, weights=weight_names, rowwise=True)
            if not parsed.plan().reductions:
                raise SpecError(
                    f"--expr {parsed.source!r} has no row reduction (sum, mean, or max/min of one argument); "
                    "without one it is an elementwise op: use --kind elementwise", "expr")
            return cls(name, op_name, kind, ns, dtype_tuple, arch, input_names, parsed.source, parsed, backend,
                       abi, weight_names, backward=backward)
        if inputs is not None or expr is not None:
            raise SpecError(f"--inputs and --expr are only for --kind {' or '.join(EXPR_KINDS)}, not {kind}", "kind")
        # --bias alone adds the bias: the epilogue a linear layer needs
        default_epilogue = "acc + bias" if bias else "acc"
        parsed_epilogue = parse_epilogue(epilogue if epilogue is not None else default_epilogue, bias)
        if (parsed_epilogue.source != "acc" or bias) and abi != "stable":
            raise SpecError(
                f"--epilogue and --bias are generated on the stable ABI only (new features start there); this "
                f"package is on the {abi} ABI: put the op in a package made with --abi stable",
                "epilogue" if epilogue is not None else "bias")
        return cls(name, op_name, kind, ns, dtype_tuple, arch, abi=abi, epilogue=parsed_epilogue.source, bias=bias,
                   backward=backward, epilogue_parsed=parsed_epilogue)

    @property
    def sm90(self) -> bool:
        """A matmul op with the CUTLASS Hopper path: on the stable ABI, with float16 or bfloat16 computed by its
        own kernels (:attr:`kernel_dtypes`)."""
        return self.abi == "stable" and self.kind == "matmul" and bool({"float16", "bfloat16"} & set(self.kernel_dtypes))

    def identifiers(self, package: str) -> dict[str, str]:
        """Input and weight name -> the identifier the generated code of this op uses for it (the
        name itself unless it would collide; see :func:`kernelgen.names.input_identifiers`)."""
        return input_identifiers((*self.inputs, *self.weights), self.op_name, package, self.namespace)

    @property
    def cpp_namespace(self) -> str:
        """The C++ namespace of the op's code: the op name, or ``<op>_op`` where the op name is a
        C/CUDA library name or an identifier the generated C++ uses (``norm``, ``std``, ``cute``)."""
        return cpp_namespace_of(self.op_name)

    @property
    def fused_backward(self) -> bool:
        """An op whose backward is a generated kernel (``<op>_backward``, its gradients written from the
        expression by :mod:`kernelgen.diff`): an elementwise or rowwise op on the Triton backend, or on the
        CUDA C++ backend on the stable ABI, and a matmul op with an epilogue or a bias (the epilogue's
        derivative, then cuBLAS's two GEMMs), unless it was created with ``backward="vjp"`` (--backward
        vjp). The full ABI's ops differentiate their reference with torch.func.vjp; a plain matmul's
        backward is two products with the op itself."""
        if self.backward != "fused" or (self.backend != "triton" and self.abi != "stable"):
            return False
        return self.kind in ("elementwise", "rowwise") or self.fused

    @property
    def saves_acc(self) -> bool:
        """A matmul op with a generated backward whose epilogue derivatives read the accumulator: its
        training forward (``<op>_with_acc``) stores it, rounded to the inputs' dtype, beside the output."""
        if self.kind != "matmul" or not self.fused_backward:
            return False
        parsed = self.parsed_epilogue
        return any("acc" in diff.variables(tree) for tree in diff.elementwise_vjp(parsed).values())

    @property
    def library_product_dtypes(self) -> list[str]:
        """The dtypes whose product a matmul op takes from cuBLAS (ATen's matmul, ``kernelgen::library_product``)
        on the GPU, then applies its epilogue in a pass of its own, on the stable ABI:

        * float32 and float64, always: cuBLAS's float32 product runs at about twice the speed of the SIMT
          kernel (which has no tensor cores to use at full float32 precision), and its float64 product uses
          the FP64 tensor cores;
        * float16 and bfloat16 when the epilogue is heavy (:func:`heavy_epilogue`): its math then costs the
          fused kernel's few epilogue warps more than the extra pass costs (reading and writing the output
          once). A light epilogue (a bias, GELU, SiLU, a square) stays fused into the op's own product kernels.
        """
        if self.kind != "matmul" or self.backend != "cuda" or self.abi != "stable":
            return []
        return [d for d in self.dtypes if d in ("float32", "float64") or self.heavy_epilogue]

    @property
    def heavy_epilogue(self) -> bool:
        """A matmul op whose epilogue's math is heavy (:func:`kernelgen.cost.heavy_epilogue`): in float16 and
        bfloat16 it runs in a pass of its own after cuBLAS's product, and its backward kernel loads one row
        at a time (``Op::kHeavy``)."""
        return self.fused and heavy_epilogue(self.parsed_epilogue.tree)

    @property
    def parsed_epilogue(self) -> ParsedExpr:
        """A matmul op's epilogue, parsed (the one :meth:`create` parsed, or parsed again for a spec built
        directly)."""
        return self.epilogue_parsed or parse_epilogue(self.epilogue, self.bias)

    @property
    def kernel_dtypes(self) -> list[str]:
        """The dtypes a matmul op computes with its own product kernels (every dtype not in
        :attr:`library_product_dtypes`)."""
        library = self.library_product_dtypes
        return [d for d in self.dtypes if d not in library]

    @property
    def fused(self) -> bool:
        """A matmul op with an epilogue other than the plain product, or a bias."""
        return self.kind == "matmul" and (self.epilogue != "acc" or self.bias)

    def record(self) -> dict[str, object]:
        """What the package's answers file records of this op (enough to render it again)."""
        data: dict[str, object] = {"name": self.op_name, "kind": self.kind, "dtypes": list(self.dtypes)}
        if self.backend != "cuda":  # recorded only when not the default, so older records stay valid
            data["backend"] = self.backend
        if self.kind in EXPR_KINDS:
            data["inputs"] = list(self.inputs)
            if self.weights:
                data["weights"] = list(self.weights)
            data["expr"] = self.expr
        if self.fused:  # recorded only when not the plain product, so older records stay valid
            data["epilogue"] = self.epilogue
            if self.bias:
                data["bias"] = True
        if self.backward != DEFAULT_BACKWARD:  # recorded only when not the default, so older records stay valid
            data["backward"] = self.backward
        return data

    def source_basenames(self) -> frozenset[str]:
        """Basenames of the op's compiled sources. JIT builds (torch.utils.cpp_extension.load)
        name object files by basename, so two ops of a package must not share one."""
        if self.backend != "cuda":
            return frozenset()
        names = {f"{self.op_name}.cpp", f"{self.op_name}_cuda.cpp", f"{self.op_name}_kernel.cu"}
        if self.kind == "matmul":
            names.add(f"{self.op_name}_sm90.cu")
        return frozenset(names)

    @property
    def part(self) -> str:
        """The template subdirectory that renders this op (see templates/copier.yml)."""
        return self.kind if self.backend == "cuda" else f"{self.kind}_{self.backend}"


#: Module names at the top of a generated package that an op module or export must not shadow.
PACKAGE_MEMBERS = frozenset(["ops", "csrc", "reference", "testing", "with_cuda"])

#: What an op registers besides itself, as torch.ops.<namespace>.<op><suffix>: its backward op, a rowwise Triton
#: op's training forward (the output and the per-row values its backward reads) and a matmul's (the output and
#: the accumulator). Two ops of a package must not register one name: the later registration would replace or
#: clash with the earlier one at import.
REGISTERED_SUFFIXES = ("", "_backward", "_train", "_with_acc")


@dataclass(frozen=True)
class PackageSpec:
    """A library of ops: one Python package, one build (one ``_C``), one torch.ops namespace."""

    name: str  # as typed: directory and distribution name
    package: str  # identifier: the Python package
    namespace: str
    arch_list: str
    ops: tuple[OpSpec, ...]
    abi: str = DEFAULT_ABI  # one per package: every C++ op of it is compiled into one _C

    @classmethod
    def for_new_op(cls, op: OpSpec, name: str | None = None) -> PackageSpec:
        """The package `kernelgen new` makes: named ``name`` (default: like its first op), holding
        ``op``, in the op's namespace and with the op's ABI."""
        if name is None:
            return cls(op.name, op.op_name, op.namespace, op.arch_list, (op,), op.abi)
        package = normalize_package_name(name)
        return cls(name, package, op.namespace, op.arch_list, (), op.abi).with_op(op)

    @staticmethod
    def namespace_for(name: str, namespace: str | None = None) -> str:
        """The torch.ops namespace of a new package named ``name``: ``namespace`` if given, else the
        package name, which is checked here (the error names the package name, not --namespace)."""
        package = normalize_package_name(name)
        if namespace is not None:
            return namespace
        return check_namespace(package, derived_from_op=True, source="package name")

    def op(self, op_name: str) -> OpSpec | None:
        return next((op for op in self.ops if op.op_name == op_name), None)

    def check_settings(self, *, namespace: str | None = None, arch_list: str | None = None,
                       abi: str | None = None) -> None:
        """Refuse a namespace, arch list or ABI for a new op that is not the package's: every op of a
        package shares them (one namespace, one build). None means "the package's"."""
        if namespace is not None and namespace != self.namespace:
            raise SpecError(f"the package's namespace is {self.namespace!r}; all its ops share it "
                            "(omit --namespace)", "namespace")
        if arch_list is not None and arch_list != self.arch_list:
            raise SpecError(f"the package builds for {self.arch_list!r}, for all its ops (omit --arch-list, "
                            "or change ARCH_LIST in the package's _build.py)", "arch_list")
        if abi is not None and abi != self.abi:
            raise SpecError(f"the package is built on the {self.abi} ABI, for all its ops (one build); "
                            f"omit --abi", "abi")

    def create_op(self, name: str, *, namespace: str | None = None, arch_list: str | None = None,
                  abi: str | None = None, **options: Any) -> OpSpec:
        """A new op for this package: :meth:`OpSpec.create` with the package's namespace, arch list and
        ABI (:meth:`check_settings` refuses others), checked against the package's ops (:meth:`with_op`)."""
        self.check_settings(namespace=namespace, arch_list=arch_list, abi=abi)
        op = OpSpec.create(name, namespace=self.namespace, arch_list=self.arch_list, abi=self.abi, **options)
        self.with_op(op)
        return op

    def with_op(self, op: OpSpec) -> PackageSpec:
        """This package plus ``op``; refuses a name the package already uses, and an op written
        for the other ABI (the package is one build)."""
        if op.abi != self.abi:
            raise SpecError(f"the package {self.package!r} is built on the {self.abi} ABI, for all its ops "
                            f"(omit --abi); op {op.op_name!r} asks for {op.abi}", "abi")
        for other in self.ops:
            if other.op_name == op.op_name:
                same = "" if other.op_name == op.name else f" ({op.name!r} and {other.op_name!r} are the same identifier)"
                raise SpecError(f"the package {self.package!r} already has an op {op.op_name!r}{same}", "op_name")
            registered = {op.op_name + a for a in REGISTERED_SUFFIXES} & {other.op_name + b for b in REGISTERED_SUFFIXES}
            if registered:
                name = sorted(registered)[0]
                raise SpecError(f"op {op.op_name!r} and op {other.op_name!r} could both register "
                                f"torch.ops.{self.namespace}.{name} (an op registers <op>{', <op>'.join(REGISTERED_SUFFIXES[1:])}); "
                                "choose another name", "op_name")
            clash = other.source_basenames() & op.source_basenames()
            if clash:
                raise SpecError(
                    f"op {op.op_name!r} would compile a source named {sorted(clash)[0]!r}, as op "
                    f"{other.op_name!r} does (JIT builds name objects by basename); choose another name",
                    "op_name",
                )
        if op.op_name in PACKAGE_MEMBERS:
            raise SpecError(f"the op name {op.op_name!r} is reserved in a package", "op_name")
        return replace(self, ops=(*self.ops, op))

    @classmethod
    def from_answers(cls, data: dict[str, object], where: str = "the answers file") -> PackageSpec:
        """Rebuild a package from a recorded answers mapping, checking the type of every field.

        Reads both the library format (``package`` and ``ops``, template version 3 and later) and
        the one-op format of template versions 1 and 2 (``op_name``, ``kind``, ... at the top). An
        answers file with no ``abi`` (template versions 1 to 3) is a package on the full ABI: its
        C++ was written against ATen, and `kernelgen update` must not rewrite it.
        """
        at: list[int] = []  # the index of the op being read
        try:
            return cls._from_answers(data, where, at)
        except AnswersError:
            raise
        except SpecError as err:  # a value no option gave: name the file and the field it came from
            field = _ANSWERS_FIELDS.get(err.param or "", err.param or "")
            if field in _OP_FIELDS and at:
                field = f"ops[{at[0]}].{field}"
            elif field == "namespace" and data.get("namespace") is None:
                field = "name (the default namespace)"
            raise AnswersError(f"{where}: {field or 'a field'}: {err.message}") from None

    @classmethod
    def _from_answers(cls, data: dict[str, object], where: str, at: list[int]) -> PackageSpec:
        def field_of(mapping: dict[str, object], key: str, kind: type, *, required: bool = True) -> Any:
            value = mapping.get(key)
            if value is None and not required:
                return None
            if value is None:
                raise AnswersError(f"{where} has no {key!r}")
            if not isinstance(value, kind) or isinstance(value, bool):
                raise AnswersError(
                    f"{where}: {key!r} must be a {_TYPE_WORDS[kind]}, not {type(value).__name__} ({_short(value)})"
                )
            if isinstance(value, list) and not all(isinstance(item, str) for item in value):
                raise AnswersError(f"{where}: {key!r} must be a list of strings, got {_short(value)}")
            return value

        if "ops" not in data:  # template versions 1 and 2: one op at the top level
            op_fields = {key: data.get(key) for key in ("kind", "dtypes", "inputs", "expr")}
            op_fields["name"] = data.get("op_name", data.get("name"))
            data = {key: data.get(key) for key in ("name", "namespace", "arch_list")} | {"ops": [op_fields]}
        name = field_of(data, "name", str)
        package = normalize_package_name(name)
        namespace = field_of(data, "namespace", str, required=False)
        arch_list = field_of(data, "arch_list", str, required=False) or DEFAULT_ARCH_LIST
        abi = field_of(data, "abi", str, required=False)
        if abi is None:
            abi = LEGACY_ABI
        elif abi not in ABIS:
            raise AnswersError(f"{where}: 'abi' must be one of {', '.join(ABIS)}, not {_short(abi)}")
        recorded_version = _version_number(data.get("_template_version"))
        raw_ops = data.get("ops")
        if not isinstance(raw_ops, list) or not raw_ops:
            raise AnswersError(f"{where}: 'ops' must be a non-empty list of ops")
        ops: list[OpSpec] = []
        for index, raw in enumerate(raw_ops):
            if not isinstance(raw, dict):
                raise AnswersError(f"{where}: ops[{index}] must be a mapping, not {type(raw).__name__}")
            kind = field_of(raw, "kind", str, required=False) or "elementwise"
            has_expr = kind in EXPR_KINDS  # inputs and an expression are recorded
            at[:] = [index]  # the op a SpecError below is about
            ops.append(OpSpec.create(
                field_of(raw, "name", str),
                kind=kind,
                inputs=field_of(raw, "inputs", list, required=True) if has_expr else None,
                expr=field_of(raw, "expr", str, required=True) if has_expr else None,
                dtypes=field_of(raw, "dtypes", list, required=False) or DTYPES,
                arch_list=arch_list,
                namespace=namespace if namespace is not None else package,
                backend=field_of(raw, "backend", str, required=False) or "cuda",
                abi=abi,
                weights=field_of(raw, "weights", list, required=False),
                epilogue=field_of(raw, "epilogue", str, required=False),
                bias=_recorded_flag(raw, "bias", f"{where}: ops[{index}]"),
                backward=field_of(raw, "backward", str, required=False) or _recorded_default_backward(
                    kind, field_of(raw, "backend", str, required=False) or "cuda", abi, recorded_version),
            ))
        first, *rest = ops
        spec = cls(name, package, first.namespace, first.arch_list, (first,), abi)
        for index, op in enumerate(rest, start=1):
            at[:] = [index]
            spec = spec.with_op(op)
        return spec

    def answers(self) -> dict[str, object]:
        """The package-level copier answers (recorded in .copier-answers.yml)."""
        return {
            "name": self.name,
            "package": self.package,
            "namespace": self.namespace,
            "arch_list": self.arch_list,
            "abi": self.abi,
            "ops": [op.record() for op in self.ops],
        }

    def render_data(self) -> dict[str, object]:
        """The package-level answers and the decisions derived from them, each made here once and
        handed to the templates (none of them is recorded: regenerating derives them again)."""
        data = self.answers()
        data.update({
            "backends": {op.op_name: op.backend for op in self.ops},
            "cuda_kinds": sorted({op.kind for op in self.ops if op.backend == "cuda"}),
            "kinds": sorted({op.kind for op in self.ops}),
            "has_triton": any(op.backend == "triton" for op in self.ops),
            "sm90_ops": [op.op_name for op in self.ops if op.sm90],
            "fused_backward_ops": [op.op_name for op in self.ops if op.fused_backward],
            "matmul_backward": any(op.kind == "matmul" and op.fused_backward for op in self.ops),
            "library_product_dtypes": {op.op_name: op.library_product_dtypes for op in self.ops
                                       if op.library_product_dtypes},
            "triton_rowwise": any(op.backend == "triton" and op.kind == "rowwise" for op in self.ops),
            "spell": ABI_SPELLINGS[self.abi],
        })
        return data

    def op_answers(self, op: OpSpec) -> dict[str, object]:
        """The copier answers that render one op of this package."""
        data = self.render_data()
        data.update({"op_name": op.op_name, "kind": op.kind, "dtypes": list(op.dtypes), "backend": op.backend})
        data["op_cpp"] = op.cpp_namespace
        data["fused_backward"] = op.fused_backward
        data["backward"] = op.backward
        if op.kind in EXPR_KINDS:
            # The templates see the inputs and weights as the identifiers of the generated code, and
            # `names` maps each back to the user's name (the public signature, schema and messages).
            ids = op.identifiers(self.package)
            data.update({"inputs": [ids[n] for n in op.inputs], "expr": op.expr,
                         "weights": [ids[n] for n in op.weights],
                         "names": {ident: name for name, ident in ids.items()}})
        if op.kind == "matmul":
            library = op.library_product_dtypes
            data.update({"epilogue": op.epilogue, "bias": op.bias, "sm90": op.sm90, "fused": op.fused,
                         "saves_acc": op.saves_acc, "library_dtypes": library,
                         "kernel_dtypes": op.kernel_dtypes, "heavy_epilogue": op.heavy_epilogue,
                         "heavy_epilogue_cost": HEAVY_EPILOGUE_COST,
                         "epilogue_cost": distinct_math_cost(op.parsed_epilogue.tree)})
        return data


def _version_number(value: object) -> int | None:
    """A recorded ``_template_version`` as a number: None where there is none (a mapping kernelgen made in
    memory, PackageSpec.answers()), 0 where it is not a whole number."""
    if value is None:
        return None
    text = str(value) if isinstance(value, (str, int)) and not isinstance(value, bool) else ""
    return int(text) if text.isdigit() else 0


def _recorded_default_backward(kind: str, backend: str, abi: str, recorded_version: int | None) -> str:
    """The backward of a recorded op with no `backward` answer: the default, except for an op kernelgen
    would now generate a backward for (Triton, or CUDA C++ on the stable ABI) that was recorded before it
    did (FUSED_BACKWARD_SINCE), which keeps the stub."""
    since = FUSED_BACKWARD_SINCE.get((kind, backend))
    if since is not None and recorded_version is not None and (backend == "triton" or abi == "stable") \
            and recorded_version < since:
        return "vjp"
    return DEFAULT_BACKWARD


_TYPE_WORDS: dict[type, str] = {str: "string", list: "list of strings", dict: "mapping"}

#: The answers-file field each SpecError param comes from (ops[i].<field> for the per-op ones).
_ANSWERS_FIELDS = {"op_name": "name", "name": "name"}
_OP_FIELDS = frozenset(["name", "kind", "inputs", "expr", "dtypes", "backend", "weights", "epilogue", "bias",
                        "backward"])


def _recorded_flag(raw: dict[str, object], key: str, where: str) -> bool:
    value = raw.get(key, False)
    if not isinstance(value, bool):
        raise AnswersError(f"{where}: {key!r} must be true or false, not {_short(value)}")
    return value


#: The names a matmul epilogue may read: the accumulator, and with --bias the bias.
EPILOGUE_NAMES = ("acc", "bias")


def parse_epilogue(text: str, bias: bool) -> ParsedExpr:
    """Parse a matmul --epilogue over ``acc`` (and ``bias`` with --bias), through the same safe parser
    as --expr; its one-line errors name --epilogue (and --bias)."""
    names = EPILOGUE_NAMES if bias else EPILOGUE_NAMES[:1]
    hints = {} if bias else {"bias": "the bias needs --bias"}
    parsed = parse_expr(text, names, option="--epilogue", hints=hints, require_all=False)
    used = parsed.variables
    if "acc" not in used:
        raise ExprError(f"--epilogue {clip(text)!r} does not use acc (the element of A @ B); "
                        "it must, e.g. 'acc + bias' or 'acc * sigmoid(acc)'", "epilogue")
    if bias and "bias" not in used:
        raise ExprError(f"--bias is given but --epilogue {clip(text)!r} does not use bias", "epilogue")
    return parsed


def _short(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."
