"""Names a generated identifier must not take, written down from their sources: C++ keywords, the C
standard library and CUDA (:data:`C_AND_CUDA_NAMES`), the macros and predefined names of a C++
compiler (:data:`C_MACRO_NAMES`), the namespaces of the libraries the generated C++ includes
(:data:`CPP_LIBRARY_NAMESPACES`), what the expression emitters write (:data:`EMITTED_NAMES`), and the
Python modules an op package must not shadow (:data:`MODULE_NAMES`, :func:`installed_module`).

An op name becomes a C++ namespace at global scope, so ``floor`` or ``int64_t`` would clash with
``::floor`` / ``::int64_t`` from <cmath> and <cstdint>. A leaf module: it imports nothing of kernelgen.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

# C++ keywords and alternative tokens, plus names the C++ standard library or CUDA make awkward.
CPP_KEYWORDS = frozenset(
    ["alignas", "alignof", "and", "and_eq", "asm", "auto", "bitand", "bitor", "bool", "break", "case", "catch", "char", "char8_t", "char16_t", "char32_t", "class", "compl", "concept", "const", "consteval", "constexpr", "constinit", "const_cast", "continue", "co_await", "co_return", "co_yield", "decltype", "default", "delete", "do", "double", "dynamic_cast", "else", "enum", "explicit", "export", "extern", "false", "float", "for", "friend", "goto", "if", "inline", "int", "long", "mutable", "namespace", "new", "noexcept", "not", "not_eq", "nullptr", "operator", "or", "or_eq", "private", "protected", "public", "register", "reinterpret_cast", "requires", "return", "short", "signed", "sizeof", "static", "static_assert", "static_cast", "struct", "switch", "template", "this", "thread_local", "throw", "true", "try", "typedef", "typeid", "typename", "union", "unsigned", "using", "virtual", "void", "volatile", "wchar_t", "while", "xor", "xor_eq", "main"]
)

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


#: Identifiers the expression emitters write besides the input names (qualifiers and types).
EMITTED_NAMES = frozenset(["opmath", "acc_t", "ACC", "tl", "libdevice", "torch", "math", "std"])
#: Macros and compiler-predefined names that make a plain identifier unusable in C++.
C_MACRO_NAMES = frozenset(["errno", "assert", "major", "minor", "linux", "unix", "i386", "stdin", "stdout",
                           "stderr", "offsetof", "setjmp", "va_arg", "va_start", "va_end", "isnan", "isinf",
                           "isfinite", "isnormal", "signbit", "fpclassify"])
#: Namespaces of the libraries the generated C++ includes (kg: the package kernels of csrc/kernelgen/):
#: an op's namespace must not reopen one.
CPP_LIBRARY_NAMESPACES = frozenset(["std", "at", "c10", "torch", "cute", "cutlass", "kernelgen", "kg", "opmath", "thrust",
                                    "cub", "detail", "internal"])
