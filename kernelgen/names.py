"""Names a generated op must not take: the data behind the name checks of :mod:`kernelgen.spec`.

Four kinds of names are collected here:

* :data:`C_AND_CUDA_NAMES`: types, functions, macros and built-in variables of the C standard
  library and of CUDA. An op name becomes a C++ namespace at global scope, so ``floor`` or
  ``int64_t`` would clash with ``::floor`` / ``::int64_t`` from <cmath> and <cstdint>.
* :data:`MODULE_NAMES` and :func:`installed_module`: Python modules an op package must not shadow.
* :func:`torch_namespaces`: the torch.ops namespaces PyTorch owns (defining an op in one aborts
  Python on import).
* :func:`template_names`: the identifiers the templates themselves use, derived from the template
  files at run time, so that an input name cannot collide with a local of the generated code.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import importlib.util
import json
import os
import re
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from . import paths
from .errors import KernelgenError

# ---------------------------------------------------------------------------------------------
# C and CUDA. Written down from the C11 standard library headers <stdio.h>, <stdlib.h>,
# <string.h>, <math.h>, <stdint.h>, <stddef.h>, <assert.h>, <ctype.h>, <time.h>, <signal.h>,
# <setjmp.h>, <stdarg.h>, <errno.h> (plus the POSIX extras glibc's <math.h> declares by default
# with g++), and from the CUDA C++ Programming Guide (built-in vector types and variables,
# half/bfloat16 types, the common device functions).

_STDIO = """
    fopen freopen fclose fflush setbuf setvbuf fprintf printf sprintf snprintf vfprintf vprintf
    vsprintf vsnprintf fscanf scanf sscanf vfscanf vscanf vsscanf fgetc fgets fputc fputs getc
    getchar gets putc putchar puts ungetc fread fwrite fgetpos fseek fsetpos ftell rewind clearerr
    feof ferror perror remove rename tmpfile tmpnam stdin stdout stderr fileno popen pclose getline
"""
_STDLIB = """
    atof atoi atol atoll strtod strtof strtold strtol strtoll strtoul strtoull rand srand
    aligned_alloc calloc free malloc realloc abort atexit at_quick_exit exit getenv quick_exit
    system bsearch qsort abs labs llabs div ldiv lldiv mblen mbtowc wctomb mbstowcs wcstombs
    posix_memalign setenv unsetenv putenv mkstemp realpath
"""
_STRING = """
    memcpy memmove memset memcmp memchr strcpy strncpy strcat strncat strcmp strncmp strcoll
    strxfrm strchr strrchr strspn strcspn strpbrk strstr strtok strerror strlen strdup strndup
    strnlen
"""
# <math.h>: each function also exists with an f (float) and an l (long double) suffix.
_MATH = """
    acos asin atan atan2 cos sin tan acosh asinh atanh cosh sinh tanh exp exp2 expm1 frexp ilogb
    ldexp log log10 log1p log2 logb modf scalbn scalbln cbrt fabs hypot pow sqrt erf erfc lgamma
    tgamma ceil floor nearbyint rint lrint llrint round lround llround trunc fmod remainder
    remquo copysign nan nextafter nexttoward fdim fmax fmin fma
"""
_MATH_OTHER = """
    fpclassify isfinite isinf isnan isnormal signbit isgreater isgreaterequal isless islessequal
    islessgreater isunordered j0 j1 jn y0 y1 yn gamma drem significand exp10 pow10 sincos
    float_t double_t huge_val infinity
"""
_TYPES_AND_MACROS = """
    size_t ssize_t ptrdiff_t max_align_t nullptr_t wchar_t wint_t intptr_t uintptr_t intmax_t
    uintmax_t off_t fpos_t va_list jmp_buf time_t clock_t div_t ldiv_t lldiv_t sig_atomic_t
    tm errno assert static_assert offsetof setjmp longjmp signal raise va_start va_arg va_end
    va_copy clock time difftime mktime strftime gmtime localtime asctime ctime NULL EOF FILE
    isalnum isalpha isblank iscntrl isdigit isgraph islower isprint ispunct isspace isupper
    isxdigit tolower toupper
"""
# CUDA: types, built-in variables and device functions an identifier could collide with.
_CUDA = """
    dim3 half half2 nv_half nv_half2 bfloat16 nv_bfloat16 nv_bfloat162 cudaStream_t cudaError_t
    cudaEvent_t cudaDeviceProp threadIdx blockIdx blockDim gridDim warpSize clock64 rsqrt rsqrtf
    rcbrt rcbrtf sinpi cospi sinpif cospif sincospi sincospif normcdf normcdff normcdfinv
    normcdfinvf erfinv erfinvf erfcinv erfcinvf erfcx erfcxf rhypot rhypotf norm norm3d norm4d
    rnorm rnorm3d rnorm4d saturate fdividef min max umin umax llmin llmax ullmin ullmax
    atomicAdd atomicSub atomicExch atomicMin atomicMax atomicCAS
"""


def _words(*blocks: str) -> set[str]:
    return {word for block in blocks for word in block.split()}


def _c_and_cuda_names() -> frozenset[str]:
    names = _words(_STDIO, _STDLIB, _STRING, _MATH, _MATH_OTHER, _TYPES_AND_MACROS, _CUDA)
    names |= {f"{fn}{suffix}" for fn in _words(_MATH) for suffix in ("f", "l")}
    # <stdint.h>: int8_t ... uint64_t and their least/fast variants.
    for bits in (8, 16, 32, 64):
        for sign in ("", "u"):
            names |= {f"{sign}int{bits}_t", f"{sign}int_least{bits}_t", f"{sign}int_fast{bits}_t"}
    # CUDA's built-in vector types (float4, uchar2, ...) and their make_<type> constructors;
    # CUDA 13 adds 16- and 32-byte aligned variants of the 4-vectors of 64-bit types.
    for base in ("char", "uchar", "short", "ushort", "int", "uint", "long", "ulong", "longlong",
                 "ulonglong", "float", "double"):
        for width in (1, 2, 3, 4):
            names |= {f"{base}{width}", f"make_{base}{width}"}
    for base in ("long", "ulong", "longlong", "ulonglong", "double"):
        names |= {f"{base}4_16a", f"{base}4_32a"}
    return frozenset(names)


#: C standard library and CUDA names (see the comment above for the sources).
C_AND_CUDA_NAMES: frozenset[str] = _c_and_cuda_names()

# ---------------------------------------------------------------------------------------------
# Python modules. sys.stdlib_module_names covers the standard library; these are the import
# names of torch's dependencies (importlib.metadata.requires("torch") for torch 2.14, with the
# CUDA wheels, all under `nvidia` and `cuda`), of kernelgen's own dependencies (click, jinja2,
# copier and what copier pulls in, pyyaml), and of the test and build stack of a generated package
# (pytest and its dependencies, setuptools, build, ninja, numpy, matplotlib).

MODULE_NAMES: frozenset[str] = frozenset(
    _words("""
    torch torchgen functorch triton nvidia cuda filelock typing_extensions setuptools
    pkg_resources distutils sympy mpmath networkx jinja2 markupsafe fsspec optree opt_einsum
    yaml click copier colorama dunamai funcy jinja2_ansible_filters packaging pathspec platformdirs
    plumbum pydantic pydantic_core annotated_types typing_inspection pygments questionary
    prompt_toolkit wcwidth pytest pluggy iniconfig py exceptiongroup tomli numpy build
    pyproject_hooks wheel pip ninja matplotlib mypy ruff hypothesis kernelgen
    """)
)


def installed_module(name: str) -> str | None:
    """Where ``name`` would be imported from in this environment, or None.

    Only real modules and packages count (not namespace packages, which any directory of that
    name on sys.path makes), and not one found right in the current directory (``python -m``
    puts it on sys.path, and the package being generated there would be found). Never raises.
    """
    if name in sys.modules:
        return "already imported"
    try:
        spec = importlib.util.find_spec(name)
    except Exception:  # a broken finder or a module whose import fails: not our concern here
        return None
    if spec is None or spec.origin in (None, "namespace"):
        return None
    origin = str(spec.origin)
    if origin in ("built-in", "frozen"):
        return origin
    try:
        path = Path(origin).resolve()
        where = path.parent.parent if path.name == "__init__.py" else path.parent
        if where == Path.cwd().resolve():
            return None
    except (OSError, ValueError):
        return None
    return origin


# ---------------------------------------------------------------------------------------------
# torch.ops namespaces. Collected from torch 2.14.1+cu130 (Python 3.11) after importing torch and
# torch._inductor, torch.distributed (tensor, fsdp, pipelining, symmetric memory), torch.export,
# torch.onnx, torch.ao.quantization and torch.nn.attention.flex_attention: the prefixes before
# '::' of torch._C._dispatch_get_all_op_names() and of torch._C._jit_get_all_schemas(), plus the
# attributes of torch.ops itself (load_library, higher_order, ...).
RECORDED_FROM_TORCH = "2.14.1+cu130"
RECORDED_TORCH_NAMESPACES: frozenset[str] = frozenset([
    "_c10d_functional", "_c10d_functional_autograd", "_dir", "_dtensor", "_inductor_test",
    "_native", "_quantized", "_test", "aten", "c10d", "c10d_functional", "coor", "cuda",
    "debug_mode_ops", "debugprims", "export", "flex_lib", "fsdp", "higher_order", "import_module",
    "inductor", "inductor_prims", "load_library", "loaded_libraries", "mempool", "mkl", "mkldnn",
    "mkldnn_prepacked", "onednn", "onnx", "onnx_symbolic", "pippy", "prim", "prims", "profiler",
    "quantization", "quantized", "quantized_decomposed", "rngprims", "sparse", "static_runtime",
    "streams", "symm_mem", "tr_c10d",
])

#: Namespaces of older torch releases and of libraries commonly loaded beside torch (written down,
#: not collected): nvprims (torch 2.0), cudnn and xnnpack kernels, torchvision, fbgemm, triton.
OTHER_TORCH_NAMESPACES: frozenset[str] = frozenset(
    ["nvprims", "cudnn", "xnnpack", "torchvision", "torchaudio", "torchao", "fbgemm", "triton", "torch"]
)

#: Set to 1 to skip asking the installed torch (tests use it to exercise the recorded list alone).
NO_TORCH_QUERY_ENV = "KERNELGEN_NO_TORCH_QUERY"


#: Where the installed torch's namespaces are cached (default: $XDG_CACHE_HOME/kernelgen, or
#: ~/.cache/kernelgen). Asking torch means importing it, about 3 s of a 4 s `kernelgen new`.
CACHE_DIR_ENV = "KERNELGEN_CACHE_DIR"
_NAMESPACE = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,127}\Z", re.ASCII)


def _torch_fingerprint() -> str | None:
    """Identifies the installed torch without importing it: version, location and the mtime of its
    __init__.py (a reinstall in place changes it). None when torch is not installed."""
    try:
        from importlib import metadata

        dist = metadata.distribution("torch")
        init = Path(str(dist.locate_file("torch/__init__.py")))
        return f"{dist.version}|{init}|{init.stat().st_mtime_ns}"
    except Exception:  # no torch, or an unreadable install: no cache
        return None


def _cache_file(fingerprint: str) -> Path:
    root = os.environ.get(CACHE_DIR_ENV) or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache"), "kernelgen")
    digest = hashlib.sha256(fingerprint.encode("utf-8", "surrogateescape")).hexdigest()[:20]
    return Path(root) / f"torch-namespaces-{digest}.json"


def _read_cache(path: Path, fingerprint: str) -> frozenset[str] | None:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    names = data.get("namespaces") if isinstance(data, dict) and data.get("torch") == fingerprint else None
    if not isinstance(names, list) or not all(isinstance(n, str) and _NAMESPACE.match(n) for n in names):
        return None  # stale or not ours: ask torch again
    return frozenset(names)


def _write_cache(path: Path, fingerprint: str, names: frozenset[str]) -> None:
    tmp = None
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".torch-namespaces-")
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            json.dump({"torch": fingerprint, "namespaces": sorted(names)}, handle)
        os.replace(tmp, path)
    except OSError:  # a read-only home: just ask torch next time
        if tmp is not None:
            with contextlib.suppress(OSError):
                os.unlink(tmp)


@functools.lru_cache(maxsize=1)
def live_torch_namespaces() -> frozenset[str]:
    """The namespaces the installed torch registers, asked from its dispatcher (empty when torch
    is not installed or fails to import), cached on disk per torch install (see CACHE_DIR_ENV)."""
    if "torch" not in sys.modules and importlib.util.find_spec("torch") is None:
        return frozenset()  # torch is not installed (or not importable here)
    fingerprint = _torch_fingerprint()
    if fingerprint is not None:
        cached = _read_cache(_cache_file(fingerprint), fingerprint)
        if cached is not None:
            return cached
    found = _ask_torch()
    if fingerprint is not None and found:
        _write_cache(_cache_file(fingerprint), fingerprint, found)
    return found


def _ask_torch() -> frozenset[str]:
    """Import torch (about 3 s) and collect every namespace its dispatcher and schemas know."""
    try:
        import torch

        names = set(torch._C._dispatch_get_all_op_names())
        names |= {schema.name for schema in torch._C._jit_get_all_schemas()}
        found = {name.split("::", 1)[0] for name in names if "::" in name}
        found |= {attr for attr in dir(torch.ops) if not attr.startswith("__")}
        return frozenset(name for name in found if _NAMESPACE.match(name))
    except Exception:  # a broken torch install must not break name checking
        return frozenset()


def torch_namespaces() -> frozenset[str]:
    """Every torch.ops namespace PyTorch owns: the recorded lists, plus the installed torch's."""
    recorded = RECORDED_TORCH_NAMESPACES | OTHER_TORCH_NAMESPACES
    if os.environ.get(NO_TORCH_QUERY_ENV) == "1":
        return recorded
    return recorded | live_torch_namespaces()


# ---------------------------------------------------------------------------------------------
# Identifiers the templates use. Derived from the template files, never written down: the
# templates change, and a list would go stale.

#: Input names that are common and safe although the templates use them as identifiers: every
#: use of them in the templates is a comprehension variable or a parameter of a function that
#: takes no input (tests/test_hardening.py checks that this stays true).
SAFE_INPUT_NAMES: frozenset[str] = frozenset(["a", "b", "c", "d", "x", "y", "z", "w", "bias", "gate", "up"])

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
_C_SUFFIXES = (".c", ".cc", ".cpp", ".cu", ".cuh", ".h", ".hpp")


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
    if suffix != ".py" and suffix not in _C_SUFFIXES:
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
        if suffix in (".py", *_C_SUFFIXES):
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


# ---------------------------------------------------------------------------------------------
# Input names -> identifiers of the generated code. A user may name an input anything lowercase
# (`q`, `mask`, `eps`, `out`, `torch`): the public Python function keeps that name, and everywhere
# the generated code uses the input as an identifier it uses a name that collides with nothing.

#: Appended to an input name that would collide, to make its identifier: `out` -> `out_arg`.
MANGLE_SUFFIX = "_arg"
#: Identifiers the expression emitters write besides the input names (qualifiers and types).
EMITTED_NAMES = frozenset(["opmath", "acc_t", "ACC", "tl", "libdevice", "torch", "math", "std"])
#: Macros and compiler-predefined names that make a plain identifier unusable in C++.
C_MACRO_NAMES = frozenset(["errno", "assert", "major", "minor", "linux", "unix", "i386", "stdin", "stdout",
                           "stderr", "offsetof", "setjmp", "va_arg", "va_start", "va_end", "isnan", "isinf",
                           "isfinite", "isnormal", "signbit", "fpclassify"])


def _is_plain(name: str) -> bool:
    """A name C++ and Python take as a local as it is: no leading or trailing '_', no '__'."""
    return not (name.startswith("_") or name.endswith("_") or "__" in name)


def input_identifiers(
    names: tuple[str, ...], op_name: str, package: str, namespace: str, *, python_names: frozenset[str] = frozenset(),
) -> dict[str, str]:
    """Map each input and weight name of one op to the identifier the generated code uses for it.

    A name stays itself unless it, or a local the templates derive from it (``{{ x }}_contig``),
    collides with an identifier of the template files that render input names in code
    (:func:`op_template_names`), a C macro, a name derived from the op, package or namespace, or
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
           if any(file.endswith(tuple(f"{suffix}.jinja" for suffix in _C_SUFFIXES)) for file in files)}
    clashes = C_AND_CUDA_NAMES | C_MACRO_NAMES | EMITTED_NAMES | CPP_LIBRARY_NAMESPACES | cpp
    plain = _is_plain(op_name) and not op_name.startswith(("aoti_", "cuda", "cublas", "nv"))
    return op_name if op_name not in clashes and plain else f"{op_name.strip('_')}_op"


#: Namespaces of the libraries the generated C++ includes (kg: the package kernels of csrc/kernelgen/):
#: an op's namespace must not reopen one.
CPP_LIBRARY_NAMESPACES = frozenset(["std", "at", "c10", "torch", "cute", "cutlass", "kernelgen", "kg", "opmath", "thrust",
                                    "cub", "detail", "internal"])


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
