"""kernelgen's library API: what the command line does, for Python code.

* :func:`new` writes a new package for an :class:`~kernelgen.spec.OpSpec` (a package of one op)
  or a :class:`~kernelgen.spec.PackageSpec`;
* :func:`add` adds an op to a package, merging the package's shared files with the user's edits;
* :func:`update` re-renders a package with the current templates, keeping the user's edits;
* :func:`load_package` reads a package's recorded answers (its ops, namespace, ABI, ...);
* :func:`read_answers` reads an answers file into a :class:`~kernelgen.spec.PackageSpec`;
* :func:`rebuild_record` re-creates a lost merge ancestor.

Each writes all or nothing (an error leaves the user's files as they were), takes one package's
lock while it writes, and returns what it did (:class:`Result`). Every failure a user can cause
raises a :class:`~kernelgen.errors.KernelgenError` subclass with a one-line message. The modules
that do the work (render, merge, record, answers) are imported only when called, so importing
this module stays cheap.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from . import fsutil
from .errors import ConflictError
from .spec import OpSpec, PackageSpec

if TYPE_CHECKING:
    from .merge import UpdateResult

__all__ = ["Change", "PackageInfo", "Result", "add", "load_package", "new", "read_answers", "rebuild_record",
           "update"]

PathLike = str | os.PathLike[str]


@dataclass(frozen=True)
class Change:
    """One file a run changes (or, on a dry run, would change).

    ``action`` is one of added, updated, removed, merged (the user's edits and the templates'
    changes both kept), conflict (merged with conflict markers to resolve), moved, skipped (the
    user deleted it and the templates changed it: left deleted) and orphaned (the user edited it and
    the templates no longer produce it: left as it is). ``diff`` is the unified diff of the file as
    it is and as it becomes, on a dry run of :func:`update` or :func:`add` (else empty).
    """

    path: str  # relative to the package directory, with '/'
    action: str
    note: str = ""
    diff: str = ""


@dataclass(frozen=True)
class Result:
    """What :func:`new`, :func:`add` or :func:`update` did (or, on a dry run, would do)."""

    path: Path  # the package directory
    package: PackageSpec  # the package afterwards: its ops, namespace, ABI, ...
    changes: tuple[Change, ...]  # the files changed; files left as they were are not listed
    written: bool  # False on a dry run, and when there was nothing to change
    op: OpSpec | None = None  # the op add() added
    backup: Path | None = None  # where new(force=True) put the files whose content it replaced
    notes: tuple[str, ...] = ()  # what the user should know, one line each (where the backup is)

    @property
    def conflicts(self) -> tuple[str, ...]:
        """The files left with conflict markers (update), or that would be (a dry run)."""
        return tuple(change.path for change in self.changes if change.action == "conflict")

    @property
    def orphaned(self) -> tuple[str, ...]:
        """The files the user edited that the templates no longer produce (kept, no longer built)."""
        return tuple(change.path for change in self.changes if change.action == "orphaned")


@dataclass(frozen=True)
class PackageInfo:
    """A package as its answers file records it."""

    path: Path  # the package directory
    spec: PackageSpec
    template_version: str  # the template version that generated it ("" when not recorded)

    def as_dict(self) -> dict[str, Any]:
        """The package as plain data (what `kernelgen ops --json` prints)."""
        pkg = self.spec
        return {
            "package": pkg.package, "name": pkg.name, "namespace": pkg.namespace, "arch_list": pkg.arch_list,
            "abi": pkg.abi, "template_version": self.template_version,
            "ops": [{**op.record(), "torch_op": f"torch.ops.{pkg.namespace}.{op.op_name}"} for op in pkg.ops],
        }


def new(spec: OpSpec | PackageSpec, output: PathLike = ".", *, force: bool = False) -> Result:
    """Write the package for ``spec`` into ``output/<name>`` (an :class:`OpSpec`: a package of that one op).

    Raises :class:`~kernelgen.errors.DestinationError` if the directory exists and is not empty,
    unless ``force``: then only the files whose content changes are written, each first copied to
    ``.kernelgen/backup/<time>/`` (:attr:`Result.backup`), and no other file is touched.
    """
    from .render import backup_note, write_package

    pkg = PackageSpec.for_new_op(spec) if isinstance(spec, OpSpec) else spec
    written = write_package(pkg, output, force=force)
    changes = tuple(Change(rel, action) for rel, action in written.actions.items() if action != "unchanged")
    note = backup_note(written)
    return Result(written.dest, pkg, changes, bool(changes), backup=written.backup,
                  notes=() if note is None else (note,))


def add(
    op: OpSpec | str, package_dir: PathLike = ".", *, dry_run: bool = False,
    show_plan: Callable[[Result], None] | None = None, **options: Any,
) -> Result:
    """Add an op to the package in ``package_dir``; the package's shared files are re-rendered and
    merged with the user's edits.

    ``op`` is an op name, with ``options`` those of :meth:`OpSpec.create` (the package's namespace,
    arch list and ABI are the op's: :meth:`PackageSpec.create_op`), or an :class:`OpSpec` created for
    this package. Nothing is written on a dry run, nor when the merge would leave conflict markers
    (:class:`~kernelgen.errors.ConflictError`). ``show_plan`` is called with the result before
    anything is written.
    """
    from .merge import apply, plan, read_recorded

    root = Path(package_dir).expanduser().resolve()
    with _locked(root, dry_run):
        recorded = read_recorded(root)
        if isinstance(op, str):
            op = recorded.spec.create_op(op, **options)
        else:
            if options:
                raise TypeError(f"add() takes no op options with an OpSpec: {', '.join(sorted(options))}")
            recorded.spec.check_settings(namespace=op.namespace, arch_list=op.arch_list, abi=op.abi)
        planned = plan(recorded, new_op=op)
        if planned.conflicts:
            raise ConflictError(
                f"adding {op.op_name} conflicts with your edits in {', '.join(planned.conflicts)}; nothing was "
                "written (merge those files by hand with the new op, or run `kernelgen update` first)"
            )
        result = _result(planned, dry_run, op=op)
        if show_plan is not None:
            show_plan(result)
        if not dry_run:
            apply(planned)
    return result


def update(
    package_dir: PathLike = ".", *, dry_run: bool = False, show_plan: Callable[[Result], None] | None = None,
) -> Result:
    """Re-render the package in ``package_dir`` with the current templates, keeping the user's edits
    (a 3-way merge against the record of what kernelgen generated).

    Files both sides changed are merged; where the changes overlap they get conflict markers and
    are listed in :attr:`Result.conflicts` (written anyway, unless ``dry_run``: resolve them by
    hand). Nothing is written when the package is up to date. ``show_plan`` is called with the
    result before anything is written.
    """
    from .merge import apply, plan, read_recorded

    with _locked(Path(package_dir).expanduser().resolve(), dry_run):
        planned = plan(read_recorded(Path(package_dir)))
        result = _result(planned, dry_run)
        if show_plan is not None:
            show_plan(result)
        if not dry_run:
            apply(planned)
    return result


def rebuild_record(package_dir: PathLike = ".") -> Path:
    """Re-create a package's missing merge ancestor (``.kernelgen/generated.json.gz``) from its
    recorded answers; exact only while the template version is unchanged. Returns its path."""
    from .merge import rebuild_record as rebuild

    with _locked(Path(package_dir).expanduser().resolve()):
        return rebuild(Path(package_dir))


def load_package(package_dir: PathLike = ".") -> PackageInfo:
    """The package in ``package_dir``, from its answers file (read strictly; see :mod:`kernelgen.answers`).

    It waits for a run that is changing the package (``add``, ``update``: the package lock), so it never
    reads a package halfway through an install."""
    from .answers import ANSWERS_FILE, load_answers

    path = Path(package_dir) / ANSWERS_FILE
    with _locked(Path(package_dir).expanduser().resolve()):
        answers = load_answers(path)
    spec = PackageSpec.from_answers(answers, where=str(path))
    return PackageInfo(Path(package_dir), spec, str(answers.get("_template_version", "")))


def read_answers(answers_file: PathLike) -> PackageSpec:
    """The package an answers file (a package's ``.copier-answers.yml``) records: regenerate it with :func:`new`."""
    from .answers import load_answers

    return PackageSpec.from_answers(load_answers(Path(answers_file)), where=str(answers_file))


def _locked(root: Path, dry_run: bool = False) -> contextlib.AbstractContextManager[None]:
    """The package lock for a run that writes into ``root`` (one run per package at a time); a dry
    run, or a directory that does not exist (reported as such later), takes none."""
    if dry_run or not root.is_dir():
        return contextlib.nullcontext()
    return fsutil.package_lock(root)


def _result(planned: UpdateResult, dry_run: bool, op: OpSpec | None = None) -> Result:
    from .merge import diff

    changes = tuple(
        Change(item.path, item.action, item.note,
               diff(planned, item) if dry_run and item.action not in ("skipped", "orphaned") else "")
        for item in planned.changes
    )
    return Result(planned.op_dir, planned.spec, changes, planned.writes_anything and not dry_run, op=op)

