"""Load matmul's compiled code: the prebuilt extension, or a JIT build.

Prebuilt (default): `import matmul._C`, after checking that the torch you run is the torch the
extension was compiled against. An extension built against one torch and loaded under another
fails with an undefined-symbol error, or worse, loads and misbehaves; this turns that into an
ImportError that names both versions and the command that fixes it.

JIT (KERNELGEN_JIT=1): compile csrc/ with torch.utils.cpp_extension.load on import, so that editing
a kernel and re-running the tests needs no pip install. ninja rebuilds only what changed. The
build directory is build/jit/ next to the package (KERNELGEN_JIT_DIR overrides it); delete it to
force a clean build. KERNELGEN_JIT_VERBOSE=1 shows the compiler commands.
"""

from __future__ import annotations

import json
import os
from typing import Any, Optional

import torch

from . import _build


def _recorded() -> Optional[dict[str, Any]]:
    try:
        return json.loads(_build.BUILD_INFO.read_text())
    except (OSError, ValueError):
        return None


def check_build_info(recorded: Optional[dict[str, Any]]) -> None:
    """Raise ImportError unless the extension was built against the running torch (and CUDA)."""
    if recorded is None:
        raise ImportError(
            f"{_build.PACKAGE}: the compiled extension is not built (no {_build.BUILD_INFO.name}). "
            f"Build it with: {_build.rebuild_command()}   (or set KERNELGEN_JIT=1)"
        )
    built = f"torch {recorded.get('torch')}" + (f" (CUDA {recorded['cuda']})" if recorded.get("cuda") else "")
    running = f"torch {torch.__version__}" + (f" (CUDA {torch.version.cuda})" if torch.version.cuda else "")
    stale = recorded.get("torch") != torch.__version__ or (
        recorded.get("with_cuda") and recorded.get("cuda") != torch.version.cuda
    )
    if stale:
        raise ImportError(
            f"{_build.PACKAGE} was built against {built} but {running} is installed; "
            f"rebuild it with: {_build.rebuild_command()}"
        )


def load() -> bool:
    """Register torch.ops.matmul.*; returns True if the CUDA kernel was built."""
    if os.environ.get("KERNELGEN_JIT") == "1":
        return _load_jit()
    recorded = _recorded()
    check_build_info(recorded)
    try:
        from . import _C  # noqa: F401  (loading the library runs its TORCH_LIBRARY registrations)
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
    cxx, nvcc = _build.compile_flags()
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
