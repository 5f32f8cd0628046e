"""The torch.ops namespaces PyTorch owns: defining an op in one (torch.ops.sparse, torch.ops.aten,
...) aborts Python on import. :func:`torch_namespaces` is the recorded lists plus what the installed
torch registers, asked once per torch install and cached on disk (:data:`CACHE_DIR_ENV`)."""

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
from pathlib import Path

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
