"""Where kernelgen's copier template lives. A leaf module (it imports only kernelgen.errors), so that
the renderer and the name scanner both find the templates without importing each other."""

from __future__ import annotations

from pathlib import Path

from .errors import RenderError


def template_dir() -> Path:
    """The copier template: shipped in the wheel as kernelgen/_templates, or the checkout's templates/."""
    here = Path(__file__).resolve().parent
    for candidate in (here / "_templates", here.parent / "templates"):
        if (candidate / "copier.yml").is_file():
            return candidate
    raise RenderError(f"kernelgen's templates are missing (looked in {here / '_templates'})")
