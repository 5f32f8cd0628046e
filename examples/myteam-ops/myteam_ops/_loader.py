"""Load myteam_ops's compiled code: the prebuilt extension, or a JIT build.

Prebuilt (default): `import myteam_ops._C`, after checking that the torch you run can load it. The
extension uses LibTorch's stable ABI only (see _build.py), so it is not tied to the torch it was
compiled with: it loads on any torch at least as new as its TORCH_TARGET_VERSION, which
_build_info.json records. An older torch lacks stable functions the binary calls, and loading it
would fail with "undefined symbol: torch_..."; this turns that into an ImportError that names both
versions and the command that fixes it. The CUDA runtime is outside the stable ABI, so a CUDA build
also needs a torch built for the same CUDA major version.

JIT (KERNELGEN_JIT=1): compile csrc/ with torch.utils.cpp_extension.load on import, so that editing
a kernel and re-running the tests needs no pip install. ninja rebuilds only what changed. The
build directory is build/jit/ next to the package (KERNELGEN_JIT_DIR overrides it); delete it to
force a clean build. KERNELGEN_JIT_VERBOSE=1 shows the compiler commands.

Either way, before any compiled code is loaded, check_no_clash() makes sure that no op this
package defines already exists in its namespace. Loading a library whose registration clashes does
not raise: the C++ static initializer throws, and the process aborts. Checking first turns that
into an ImportError that names the op and the library that holds it. An op that this package's
own ops/<op>.py already registered (importlib.reload of the package) is not a clash.
"""

from __future__ import annotations

import json
import os
import re
import sys
from pathlib import Path
from typing import Any, Optional

import torch

from . import _build


def _recorded() -> Optional[dict[str, Any]]:
    try:
        return json.loads(_build.BUILD_INFO.read_text())
    except (OSError, ValueError):
        return None


def _major_minor(version_text: Optional[str]) -> Optional[tuple[int, int]]:
    """(2, 10) for "2.10", "2.10.1+cu130" or "2.10.0.dev20251001"; None if unparsable."""
    match = re.match(r"(\d+)\.(\d+)", version_text or "")
    return (int(match.group(1)), int(match.group(2))) if match else None


def check_build_info(recorded: Optional[dict[str, Any]]) -> None:
    """Raise ImportError unless the running torch (and CUDA) can load the extension.

    Stable ABI: any torch at least as new as the recorded torch_target_version loads it; an older
    one is refused. A CUDA build also needs a CUDA torch of the same CUDA major version: the binary
    links libcudart.so.<major>, which the stable ABI does not cover.
    """
    if recorded is None:
        raise ImportError(
            f"{_build.PACKAGE}: the compiled extension is not built (no {_build.BUILD_INFO.name}). "
            f"Build it with: {_build.rebuild_command()}   (or set KERNELGEN_JIT=1)"
        )
    rebuild = f"rebuild it with: {_build.rebuild_command()}"
    needed = _major_minor(recorded.get("torch_target_version"))
    if needed is None:  # a record without a target: a binary built on the full ABI, tied to one torch
        if recorded.get("torch") != torch.__version__:
            raise ImportError(
                f"{_build.PACKAGE} was built against torch {recorded.get('torch')} (not on the stable ABI) "
                f"but torch {torch.__version__} is installed; {rebuild}"
            )
        return
    running = _major_minor(torch.__version__)
    if running is None or running < needed:
        raise ImportError(
            f"{_build.PACKAGE} needs torch >= {needed[0]}.{needed[1]} (it is built on the LibTorch stable ABI "
            f"for that version, with torch {recorded.get('torch')}) but torch {torch.__version__} is installed; "
            f"upgrade torch, or lower TORCH_TARGET_VERSION in {_build.PACKAGE}/_build.py and {rebuild}"
        )
    if recorded.get("with_cuda"):
        built_cuda = str(recorded.get("cuda"))
        if torch.version.cuda is None:
            raise ImportError(
                f"{_build.PACKAGE} was built with CUDA {built_cuda} but torch {torch.__version__} is a CPU-only "
                f"build, which cannot load CUDA code; install a CUDA build of torch, or {rebuild}"
            )
        if built_cuda.split(".")[0] != torch.version.cuda.split(".")[0]:
            raise ImportError(
                f"{_build.PACKAGE} was built with CUDA {built_cuda} but torch {torch.__version__} uses CUDA "
                f"{torch.version.cuda}; the CUDA runtime is not covered by the stable ABI, so the major versions "
                f"must match: {rebuild}"
            )


def _python_definer(qualified: str) -> Optional[tuple[str, str]]:
    """(module, file) of the Python code that defined the op through torch.library.custom_op or
    triton_op (as the ops/<op>.py of a Triton op does), or None for an op defined in C++.

    The dispatcher names only torch's own registration code for such ops, so the definition is
    looked up in torch's table of Python-defined ops (private, so any failure means "unknown"),
    and the first function of it that lives outside torch names the module.
    """
    try:
        from torch._library.custom_ops import OPDEFS

        opdef = OPDEFS.get(qualified)
    except Exception:  # noqa: BLE001 (an unknown owner must not hide the clash itself)
        return None
    if opdef is None:
        return None
    functions = []
    for name in ("_init_fn", "_abstract_fn", "_setup_context_fn", "_backward_fn"):
        function = getattr(opdef, name, None)
        functions.append(function)
        # triton_op wraps the function it registers: the wrapper lives in torch, the function in a closure
        functions.extend(cell.cell_contents for cell in getattr(function, "__closure__", None) or ())
    for function in functions:
        module = getattr(function, "__module__", None)
        code = getattr(function, "__code__", None)
        if isinstance(module, str) and code is not None and module.split(".")[0] != "torch":
            return module, code.co_filename
    return None


def _is_ours(qualified: str) -> bool:
    """True if this package's own code defined the op (an earlier import in this process)."""
    definer = _python_definer(qualified)
    if definer is None:
        return False
    module, filename = definer
    try:
        inside = Path(filename).resolve().is_relative_to(_build.PACKAGE_DIR)
    except (OSError, ValueError):
        return False
    return inside and module.split(".")[0] == _build.PACKAGE


def _owner(qualified: str) -> str:
    """Who registered the op: a loaded Python package if its files hold the registering source,
    else that source file (from the dispatcher's debug dump), else "another library"."""
    definer = _python_definer(qualified)
    if definer is not None:
        module, source = definer
        top = module.split(".")[0]
        return f"the package {top!r} ({source})" if top in sys.modules else f"the module {module!r} ({source})"
    try:
        dump = torch._C._dispatch_dump(qualified)  # private, so only used for this message
    except Exception:  # noqa: BLE001 (any failure here must not hide the clash itself)
        return "another library"
    match = re.search(r"^debug: registered at (.+?)(?::\d+)?$", dump, re.MULTILINE)
    if not match:
        return "another library"
    source = match.group(1).strip()
    for name, module in list(sys.modules.items()):
        location = getattr(module, "__file__", None)
        if location and "." not in name and name != _build.PACKAGE and Path(location).name == "__init__.py":
            if source.startswith(str(Path(location).parent) + os.sep):
                return f"the package {name!r} ({source})"
    if re.search(r"[/\\]torch[/\\](_library[/\\]|library\.py)", source):
        return f"a library that defines ops from Python through torch.library ({source})"
    if "/torch/" in source or "pytorch" in source:
        return f"PyTorch itself ({source})"
    return source


def check_no_clash() -> None:
    """Raise ImportError if an op of this package is already defined (by another library)."""
    namespace = getattr(torch.ops, _build.NAMESPACE)
    for op in _build.OPS:
        try:
            getattr(namespace, op)  # torch.ops raises AttributeError for an op nobody defined
        except AttributeError:
            continue
        qualified = f"{_build.NAMESPACE}::{op}"
        if _is_ours(qualified):
            continue  # defined by this package's ops/<op>.py, imported before (importlib.reload)
        raise ImportError(
            f"{_build.PACKAGE}: cannot load: the op {qualified} is already defined in this process by "
            f"{_owner(qualified)}. Two libraries cannot define the same op in one namespace; rename the op "
            f"in one of them, or generate one with another namespace (kernelgen new ... --namespace <other>)"
        )


def load() -> bool:
    """Register torch.ops.myteam.* (the ops in _build.OPS); returns True if the CUDA kernels were built."""
    if f"{_build.PACKAGE}._C" not in sys.modules:  # importlib.reload(): already registered, by us
        check_no_clash()
    if not _build.HAS_EXTENSION:
        return False  # only Triton ops: they register themselves when ops/<op>.py is imported
    if os.environ.get("KERNELGEN_JIT") == "1":
        return _load_jit()
    recorded = _recorded()
    check_build_info(recorded)
    # Two builds side by side (say _C.cpython-311-*.so from an older build and _C.abi3.so): Python
    # would pick one by its own rules, whatever _build_info.json says. Refuse to guess.
    built = sorted(p.name for p in _build.PACKAGE_DIR.glob("_C.*") if p.suffix in (".so", ".pyd"))
    if len(built) > 1:
        raise ImportError(
            f"{_build.PACKAGE}: several compiled extensions in {_build.PACKAGE_DIR}: {', '.join(built)}; "
            f"delete them and rebuild with: {_build.rebuild_command()}"
        )
    try:
        from . import _C  # noqa: F401  (loading the library runs its STABLE_TORCH_LIBRARY registrations)
    except ImportError as err:
        raise ImportError(
            f"{_build.PACKAGE}: failed to load the compiled extension ({err}); "
            f"rebuild it with: {_build.rebuild_command()}"
        ) from err
    return bool(recorded and recorded.get("with_cuda"))


def _load_jit() -> bool:
    with_cuda = _build.configure_environment(jit=True)
    from torch.utils.cpp_extension import load as load_extension

    directory = os.environ.get("KERNELGEN_JIT_DIR") or str(_build.ROOT / "build" / "jit")
    tag = f"torch{torch.__version__}-{'cuda' if with_cuda else 'cpu'}".replace("+", "_").replace(".", "_")
    directory = os.path.join(directory, tag)
    os.makedirs(directory, exist_ok=True)
    cxx, nvcc = _build.compile_flags(with_cuda)
    load_extension(
        name=f"{_build.PACKAGE}_jit",
        sources=[str(path) for path in _build.sources(with_cuda)],
        extra_cflags=cxx,
        extra_cuda_cflags=nvcc,
        build_directory=directory,
        is_python_module=False,
        verbose=os.environ.get("KERNELGEN_JIT_VERBOSE") == "1",
    )
    return with_cuda
