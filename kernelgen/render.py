"""Render the copier template for a :class:`~kernelgen.spec.PackageSpec`, and write it safely.

A package is rendered in parts (see templates/copier.yml): the package part once, then one part per
op, each by copier into its own temporary directory outside the user's tree. The parts are joined
in memory (a path produced twice is a template bug, reported as such), so that nothing reaches
the destination until everything has rendered. Then:

* a new package is written into a staging directory beside the destination and renamed into
  place in one step, so an interrupted ``new`` leaves either nothing or the whole package;
* ``--force`` into an existing directory goes through :func:`kernelgen.fsutil.install`: no write
  through a symlink, all or nothing, and every file whose content it replaces is first copied to
  ``.kernelgen/backup/<time>/``. Files the templates do not produce are never touched.

Every package is written with its merge ancestor (:mod:`kernelgen.record`).
"""

from __future__ import annotations

import os
import tempfile
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from . import fsutil, paths
from .errors import DestinationError, RenderError
from .record import with_record
from .spec import OpSpec, PackageSpec, normalize_package_name


def _run_copier(data: dict[str, Any], directory: Path) -> None:
    import copier

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # copier warns about dirty template trees and unsafe mode
        try:
            copier.run_copy(
                str(paths.template_dir()),
                str(directory),
                data=data,
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


def _read_tree(root: Path) -> dict[str, bytes]:
    return {
        path.relative_to(root).as_posix(): path.read_bytes()
        for path in sorted(root.rglob("*"))
        if path.is_file()
    }


def render_package(pkg: PackageSpec) -> dict[str, bytes]:
    """Every file of ``pkg`` as the current templates produce it (relative path -> bytes).

    The ancestor record is not included (see :func:`with_record`).
    """
    files: dict[str, bytes] = {}
    parts: list[tuple[str, dict[str, Any]]] = [("package", pkg.render_data())]
    parts += [(op.part, pkg.op_answers(op)) for op in pkg.ops]
    with tempfile.TemporaryDirectory(prefix="kernelgen-render-") as tmp:
        for index, (part, answers) in enumerate(parts):
            out = Path(tmp) / str(index)
            _run_copier({**answers, "part": part}, out)
            for rel, content in _read_tree(out).items():
                if rel in files:
                    raise RenderError(f"template bug: {rel} is produced twice (by the {part} part)")
                files[rel] = content
    return files


def _check_siblings(parent: Path, name: str) -> None:
    """Refuse `foo-bar` beside an existing `foo_bar` (and the reverse): one package, two names."""
    identifier = normalize_package_name(name)
    try:
        siblings = [entry.name for entry in os.scandir(parent)]
    except OSError:
        return
    for sibling in siblings:
        if sibling != name and sibling.replace("-", "_") == identifier and (parent / sibling).is_dir():
            raise DestinationError(
                f"{parent / sibling} exists and is the same package as {name!r} (Python package {identifier!r}); "
                "choose another name, or use that directory"
            )


@dataclass(frozen=True)
class Written:
    """What :func:`write_package` did: the package directory, each file's action (``added``,
    ``updated`` or ``unchanged``, by relative path), and where ``force`` put the files it replaced."""

    dest: Path
    actions: dict[str, str]
    backup: Path | None = None


def write_package(pkg: PackageSpec, output: str | os.PathLike[str] = ".", *, force: bool = False) -> Written:
    """Write ``pkg`` to ``output/<name>``, all or nothing (see :func:`generate`)."""
    try:
        parent = Path(output).expanduser().resolve()
    except (RuntimeError, OSError) as err:  # "~nouser/x", a loop of links
        raise DestinationError(f"cannot use output directory {os.fspath(output)!r}: {err}") from None
    dest = parent / pkg.name
    if os.path.islink(dest):
        raise DestinationError(f"{dest} is a symlink; kernelgen writes only into real directories")
    if dest.exists() and not dest.is_dir():
        raise DestinationError(f"{dest} exists and is not a directory")
    if dest.is_dir() and any(dest.iterdir()) and not force:
        raise DestinationError(f"{dest} exists and is not empty; use --force to write into it")
    if not dest.exists():
        _check_siblings(parent, pkg.name)
    files = with_record(render_package(pkg))
    try:
        parent.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise DestinationError(f"cannot create {parent}: {err.strerror}") from None
    if dest.exists():
        with fsutil.package_lock(dest):
            return _write_forced(dest, files)
    fsutil.sweep_stale_staging(parent)
    staging = fsutil.make_staging(parent)
    try:
        out = staging / "out"
        for rel, content in files.items():
            target = out / fsutil.check_relative(rel)
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(content)
        with fsutil.deferred_signals():  # the rename and the cleanup after it run to the end
            try:
                os.rename(out, dest)  # one step: the package appears whole, or not at all
            except OSError as err:
                raise DestinationError(f"cannot create {dest}: {err.strerror}; nothing was changed") from None
            fsutil.OUTCOME.applied = True
            fsutil.remove_staging(staging)
    except OSError as err:
        raise DestinationError(f"writing {dest} failed: {err.strerror}; nothing was changed") from None
    finally:
        fsutil.remove_staging(staging)
    return Written(dest, dict.fromkeys(files, "added"))


def backup_note(written: Written) -> str | None:
    """The note for the user about the files ``force`` replaced, if it replaced any."""
    if written.backup is None:
        return None
    count = sum(1 for rel, action in written.actions.items() if action == "updated" and not rel.startswith(".kernelgen/"))
    return f"note: --force replaced {count} file(s); the previous versions are in {written.backup}"


def generate(
    spec: OpSpec | PackageSpec, output: str | os.PathLike[str] = ".", *, force: bool = False,
    report: Callable[[str], None] | None = None,
) -> Path:
    """Write the package for ``spec`` to ``output/<name>`` and return that path.

    An :class:`OpSpec` makes a package holding that one op (what `kernelgen new` does). Raises
    :class:`DestinationError` if the destination is a non-empty directory and ``force`` is false.
    On any failure the destination is left exactly as it was. ``report`` receives notes for the
    user (where --force put the files it replaced).
    """
    pkg = PackageSpec.for_new_op(spec) if isinstance(spec, OpSpec) else spec
    written = write_package(pkg, output, force=force)
    note = backup_note(written)
    if note is not None and report is not None:
        report(note)
    return written.dest


def _write_forced(dest: Path, files: dict[str, bytes]) -> Written:
    """--force into an existing directory: back up every file whose content changes, then install."""
    changes: dict[str, bytes | None] = {}
    actions: dict[str, str] = {}
    stamp = time.strftime("%Y%m%d-%H%M%S")
    backed_up = False
    for rel, content in files.items():
        target = fsutil.safe_target(dest, rel)
        actions[rel] = "added"
        if target.is_file():
            old = target.read_bytes()
            if old == content:
                actions[rel] = "unchanged"
                continue
            actions[rel] = "updated"
            if not rel.startswith(".kernelgen/"):
                changes[f".kernelgen/backup/{stamp}/{rel}"] = old
                backed_up = True
        changes[rel] = content
    if changes:
        fsutil.apply_changes(dest, changes)
    return Written(dest, actions, dest / ".kernelgen" / "backup" / stamp if backed_up else None)
