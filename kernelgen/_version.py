"""kernelgen's version, read from the installed distribution's metadata (pyproject.toml is its one
source). A leaf module: anything in kernelgen may import it without an import circle."""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("kernelgen")
except PackageNotFoundError:  # a checkout on sys.path that was never installed
    __version__ = "0+unknown"
