"""Render the copier template for an :class:`~kernelgen.spec.OpSpec` into a directory, safely.

Copier renders into a fresh temporary directory next to the destination. Only when that has
fully succeeded are the files moved into place, so a failure never leaves a half-written op, and
with ``force`` a file that is overwritten is first set aside and restored if a later move fails.
Files in the destination that the template does not produce are never touched.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import warnings
from pathlib import Path

from .errors import DestinationError, RenderError
from .spec import OpSpec

ANSWERS_FILE = ".copier-answers.yml"
#: The pristine output of the template version that generated an op: the common ancestor that
#: `kernelgen update` merges the user's edits and the current templates against.
BASE_DIR = Path(".kernelgen") / "base"
_BASE_README = """\
# .kernelgen/

`base/` is exactly what kernelgen generated for this op (template version in
`../.copier-answers.yml`). `kernelgen update` uses it as the common ancestor of a 3-way merge
between your edits and the current templates, and refreshes it afterwards. Do not edit it; do
commit it.
"""


def template_dir() -> Path:
    """The copier template: shipped in the wheel as kernelgen/_templates, or the checkout's templates/."""
    here = Path(__file__).resolve().parent
    for candidate in (here / "_templates", here.parent / "templates"):
        if (candidate / "copier.yml").is_file():
            return candidate
    raise RenderError(f"kernelgen's templates are missing (looked in {here / '_templates'})")


def render_to(spec: OpSpec, directory: Path) -> None:
    """Render ``spec`` into the empty or missing ``directory`` with copier (no safety net)."""
    import copier

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # copier warns about dirty template trees and unsafe mode
        try:
            copier.run_copy(
                str(template_dir()),
                str(directory),
                data=spec.answers(),
                defaults=True,
                overwrite=True,
                quiet=True,
                unsafe=True,  # our own template: its Jinja extension is kernelgen._jinja
                skip_tasks=True,
                vcs_ref=None,
            )
        except Exception as err:  # copier and Jinja raise many types; the user needs one line
            detail = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
            raise RenderError(f"rendering the template failed: {detail}") from err


def snapshot_base(root: Path) -> None:
    """Copy the rendered files of ``root`` into ``root/.kernelgen/base`` (the merge ancestor)."""
    base = root / BASE_DIR
    if base.exists():
        shutil.rmtree(base)
    for path in sorted(root.rglob("*")):
        rel = path.relative_to(root)
        if rel.parts[0] == ".kernelgen" or not path.is_file():
            continue
        target = base / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, target)
    (root / ".kernelgen" / "README.md").write_text(_BASE_README)


def _check_destination(dest: Path, force: bool) -> None:
    if dest.exists() and not dest.is_dir():
        raise DestinationError(f"{dest} exists and is not a directory")
    if dest.is_dir() and any(dest.iterdir()) and not force:
        raise DestinationError(f"{dest} exists and is not empty; use --force to write into it")


def generate(spec: OpSpec, output: str | os.PathLike[str] = ".", *, force: bool = False) -> Path:
    """Write the op package for ``spec`` to ``output/spec.name`` and return that path.

    Raises :class:`DestinationError` if the destination is a non-empty directory and ``force``
    is false. On any failure the destination is left exactly as it was.
    """
    parent = Path(output).expanduser().resolve()
    dest = parent / spec.name
    _check_destination(dest, force)
    try:
        parent.mkdir(parents=True, exist_ok=True)
        staging = Path(tempfile.mkdtemp(prefix=f".{spec.name}.kernelgen-", dir=parent))
    except OSError as err:
        raise DestinationError(f"cannot write to {parent}: {err.strerror}") from None
    try:
        render_to(spec, staging / "out")
        snapshot_base(staging / "out")
        _install(staging / "out", dest, staging / "backup")
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return dest


def _install(src: Path, dest: Path, backup: Path) -> None:
    """Move every file of ``src`` into ``dest``; on failure undo every move made so far."""
    created_root = not dest.exists()
    moved: list[tuple[Path, Path | None]] = []  # (target, its backup or None if it was new)
    created_dirs: list[Path] = []
    try:
        if created_root:
            dest.mkdir()
        for path in sorted(src.rglob("*")):
            target = dest / path.relative_to(src)
            if path.is_dir():
                if not target.exists():
                    target.mkdir()
                    created_dirs.append(target)
                elif not target.is_dir():
                    raise DestinationError(f"{target} is a file, but the op needs a directory there")
                continue
            saved = None
            if target.exists() or target.is_symlink():
                if target.is_dir():
                    raise DestinationError(f"{target} is a directory, but the op needs a file there")
                saved = backup / path.relative_to(src)
                saved.parent.mkdir(parents=True, exist_ok=True)
                os.replace(target, saved)
            moved.append((target, saved))
            os.replace(path, target)
    except BaseException as err:
        for target, saved in reversed(moved):
            try:
                if target.exists():
                    target.unlink()
                if saved is not None:
                    os.replace(saved, target)
            except OSError:
                pass
        for directory in reversed(created_dirs):
            shutil.rmtree(directory, ignore_errors=True)
        if created_root:
            shutil.rmtree(dest, ignore_errors=True)
        if isinstance(err, OSError):
            raise DestinationError(f"writing {dest} failed ({err.strerror}); nothing was changed") from None
        raise
