"""`kernelgen update` and `kernelgen add`: re-render a package, keeping the user's edits.

Both are a 3-way merge per file: *base* is what kernelgen generated last time (the compact record
``.kernelgen/generated.json.gz``, or the ``.kernelgen/base/`` copy of template versions 1 and 2),
*ours* is the file as the user has it now, *theirs* is what the current templates produce, for
the recorded answers (update) or for the recorded answers plus one op (add). Where only one side
changed, that side wins; where both changed, the lines are merged with ``git merge-file`` (a
proven diff3 that needs no repository), and overlapping changes are left as conflict markers and
reported. Nothing the user wrote is dropped silently: a file the template removed but the user
edited is kept, and one the user deleted is not brought back.

Writing is all or nothing (:func:`kernelgen.fsutil.install`), never through a symlink, and an
up-to-date package is not written at all.

Why not ``copier update``: it needs the template to be a tagged git repository and the op to be
a clean git checkout. kernelgen's templates ship inside a wheel, and ops live in all kinds of
repositories, so the ancestor is recorded next to the package instead.
"""

from __future__ import annotations

import contextlib
import difflib
import os
import shutil
import subprocess
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from . import fsutil
from ._jinja import TEMPLATE_VERSION
from .answers import ANSWERS_FILE, load_answers, parse_answers
from .errors import AnswersError, KernelgenError
from .record import LEGACY_BASE_DIR, RECORD, RECORD_README, decode_record, read_record, with_record
from .render import render_package
from .spec import OpSpec, PackageSpec

__all__ = ["FileResult", "Recorded", "UpdateResult", "apply", "diff", "merge3", "plan", "read_recorded",
           "rebuild_record"]


@dataclass(frozen=True)
class Recorded:
    """A package as kernelgen recorded it: its root, its answers file (parsed) and the spec read from it."""

    root: Path
    answers: dict[str, object]
    spec: PackageSpec

    @property
    def template_version(self) -> str:
        return str(self.answers.get("_template_version", "?"))


def read_recorded(op_dir: Path) -> Recorded:
    """The package in ``op_dir`` from its answers file, read through no symlink."""
    root = op_dir.expanduser().resolve()
    if not root.is_dir():
        raise KernelgenError(f"{op_dir} is not a directory")
    answers_path = root / ANSWERS_FILE
    fsutil.safe_target(root, ANSWERS_FILE)
    answers = load_answers(answers_path)
    return Recorded(root, answers, PackageSpec.from_answers(answers, where=str(answers_path)))


@dataclass
class FileResult:
    path: str
    action: str  # unchanged, kept, updated, added, removed, merged, conflict, skipped, orphaned, moved
    content: bytes | None = None  # what the file becomes (None: delete / leave absent)
    note: str = ""
    moved_from: str | None = None  # template version 2 -> 3: the file's old path, deleted on apply


@dataclass
class UpdateResult:
    op_dir: Path
    spec: PackageSpec
    files: list[FileResult] = field(default_factory=list)
    record: dict[str, bytes] = field(default_factory=dict)  # what the ancestor record becomes
    legacy_base: bool = False  # .kernelgen/base/ exists and is to be replaced by the record
    record_changed: bool = False

    @property
    def conflicts(self) -> list[str]:
        return [f.path for f in self.files if f.action == "conflict"]

    @property
    def orphaned(self) -> list[str]:
        return [f.path for f in self.files if f.action == "orphaned"]

    @property
    def changes(self) -> list[FileResult]:
        return [f for f in self.files if f.action not in ("unchanged", "kept")]

    @property
    def writes_anything(self) -> bool:
        return self.record_changed or self.legacy_base or any(
            f.action not in ("skipped", "orphaned") for f in self.changes
        )


def merge3(ours: bytes, base: bytes, theirs: bytes, labels: tuple[str, str, str]) -> tuple[bytes, bool]:
    """Line-based 3-way merge; returns (merged bytes, clean)."""
    git = shutil.which("git")
    if git is None:
        raise KernelgenError("kernelgen update needs git on PATH: it merges with `git merge-file`")
    with tempfile.TemporaryDirectory(prefix="kernelgen-merge-") as tmp:
        paths = []
        for name, content in (("ours", ours), ("base", base), ("theirs", theirs)):
            path = os.path.join(tmp, name)
            with open(path, "xb") as fh:
                fh.write(content)
            paths.append(path)
        try:
            done = subprocess.run(
                [git, "merge-file", "-p", "-L", labels[0], "-L", labels[1], "-L", labels[2], *paths],
                capture_output=True, timeout=120,
            )
        except (OSError, subprocess.TimeoutExpired) as err:
            raise KernelgenError(f"git merge-file failed: {err}") from None
    if done.returncode < 0 or done.returncode > 127:
        raise KernelgenError(f"git merge-file failed: {done.stderr.decode(errors='replace').strip()}")
    return done.stdout, done.returncode == 0


# Template versions 1 and 2 made one op per package with its sources straight under csrc/ and its
# Python face in ops.py; version 3 moved them to csrc/<op>/ and ops/<op>.py. Edits follow the move.
def _legacy_path(rel: str, package: str, op: str) -> str:
    prefix = f"{package}/csrc/"
    if rel == f"{package}/ops.py":
        return f"{package}/ops/{op}.py"
    if rel.startswith(prefix) and rel != f"{prefix}opmath.h":
        return f"{prefix}{op}/{rel[len(prefix):]}"
    return rel


def _read_ours(root: Path, rel: str) -> bytes | None:
    target = fsutil.safe_target(root, rel)
    try:
        return target.read_bytes() if target.is_file() else None
    except OSError as err:
        raise KernelgenError(f"cannot read {target}: {err.strerror}") from None


def _load_base(root: Path, recorded_version: str) -> tuple[dict[str, bytes], bool]:
    record = root / RECORD
    legacy = root / LEGACY_BASE_DIR
    if os.path.lexists(record):
        fsutil.safe_target(root, RECORD)
        return decode_record(read_record(record), str(record)), False
    if legacy.is_dir() and not legacy.is_symlink():
        base = {}
        for path in sorted(legacy.rglob("*")):
            if path.is_file() and not path.is_symlink():
                base[path.relative_to(legacy).as_posix()] = path.read_bytes()
        return base, True
    raise KernelgenError(
        f"{root} has no {RECORD} (what kernelgen generated, the ancestor a 3-way merge needs); "
        f"restore it from version control, or run `kernelgen update --rebuild-record {root}` to "
        "re-create it from the recorded answers (exact only if the template version is unchanged: "
        f"recorded {recorded_version}, current {TEMPLATE_VERSION})"
    )


def rebuild_record(op_dir: Path) -> Path:
    """Re-create a missing ancestor record from the recorded answers; writes only inside .kernelgen/."""
    root = op_dir.resolve()
    answers = load_answers(root / ANSWERS_FILE)
    pkg = PackageSpec.from_answers(answers, where=str(root / ANSWERS_FILE))
    if os.path.lexists(root / RECORD):
        raise KernelgenError(f"{root / RECORD} exists; refusing to replace it")
    recorded = with_record(render_package(pkg))
    fsutil.apply_changes(root, {RECORD: recorded[RECORD], RECORD_README: recorded[RECORD_README]})
    return root / RECORD


def plan(package: Recorded, new_op: OpSpec | None = None) -> UpdateResult:
    """What `update` (or, with ``new_op``, `add`) would do to ``package``; writes nothing."""
    root, answers, pkg = package.root, package.answers, package.spec
    recorded_version = package.template_version
    base, legacy = _load_base(root, recorded_version)
    _check_modules_present(root, base)
    if new_op is not None:
        if recorded_version != TEMPLATE_VERSION:
            raise KernelgenError(
                f"{root} was generated with template version {recorded_version}, and this kernelgen has "
                f"version {TEMPLATE_VERSION}: run `kernelgen update {root}` first, then add the op"
            )
        _check_answers_as_recorded(root, answers, base.get(ANSWERS_FILE))
        pkg = pkg.with_op(new_op)
    theirs = render_package(pkg)
    moved: dict[str, str] = {}  # new path -> old path (template version 2 -> 3)
    if "ops" not in answers and len(pkg.ops) >= 1:
        op = pkg.ops[0].op_name
        for rel in list(base):
            new_rel = _legacy_path(rel, pkg.package, op)
            if new_rel != rel and new_rel in theirs:
                base[new_rel] = base.pop(rel)
                moved[new_rel] = rel
    old_version = answers.get("_kernelgen_version", "?")
    labels = ("your edits", f"kernelgen {old_version} (as generated)", "kernelgen templates now")
    result = UpdateResult(root, pkg, legacy_base=legacy)
    for rel in sorted(set(base) | set(theirs)):
        b, t = base.get(rel), theirs.get(rel)
        source = moved.get(rel, rel)
        o = _read_ours(root, source)
        if source != rel and o is not None and _read_ours(root, rel) is not None:
            raise KernelgenError(f"both {source} and {rel} exist; move your edits into {rel}, delete {source}, "
                                 "and run update again")
        item = _merge_one(rel, o, b, t, labels)
        if source != rel and item.action not in ("skipped", "removed"):
            item.moved_from = source
            if item.action in ("unchanged", "kept"):
                edited = item.action == "kept"
                item.action, item.note = "moved", f"from {source}" + (" (with your edits)" if edited else "")
            else:
                item.note = (item.note + "; " if item.note else "") + f"moved from {source}"
        result.files.append(item)
    new_record = with_record(theirs)
    result.record = {RECORD: new_record[RECORD], RECORD_README: new_record[RECORD_README]}
    current = {rel: _read_ours(root, rel) for rel in result.record}
    result.record_changed = any(current[rel] != result.record[rel] for rel in result.record)
    return result


def _check_modules_present(root: Path, base: dict[str, bytes]) -> None:
    """Refuse a package whose Python module directory is gone: every file in it would count as
    deleted by the user (which update respects), so update would say "up to date" and add would
    write an op into a package that cannot be imported."""
    for rel in sorted(base):
        parts = rel.split("/")
        if len(parts) == 2 and parts[1] == "__init__.py" and not (root / parts[0]).exists():
            count = sum(1 for other in base if other.startswith(parts[0] + "/"))
            raise KernelgenError(
                f"{root / parts[0]} is missing: the package's Python module ({count} generated files) was deleted or "
                f"moved; restore it (from version control: git checkout -- {parts[0]}), then run kernelgen again"
            )


def _first_difference(recorded: object, now: object, where: str = "") -> str:
    """Where two parsed answers mappings first differ, in words: "'name': recorded 'a', now 'b'"."""
    def show(value: object) -> str:
        text = repr(value)
        return ascii(text if len(text) <= 40 else text[:37] + "...")[1:-1]

    if isinstance(recorded, dict) and isinstance(now, dict):
        for key in [*recorded, *(k for k in now if k not in recorded)]:
            if recorded.get(key, _ABSENT) != now.get(key, _ABSENT):
                return _first_difference(recorded.get(key, _ABSENT), now.get(key, _ABSENT),
                                         f"{where}.{key}" if where else str(key))
    if isinstance(recorded, list) and isinstance(now, list) and len(recorded) == len(now):
        for index, (a, b) in enumerate(zip(recorded, now, strict=True)):
            if a != b:
                return _first_difference(a, b, f"{where}[{index}]")
    before = "absent" if recorded is _ABSENT else show(recorded)
    after = "absent" if now is _ABSENT else show(now)
    return f"{where or 'the file'}: recorded {before}, now {after}"


_ABSENT = object()


def _check_answers_as_recorded(root: Path, answers: dict[str, object], recorded: bytes | None) -> None:
    """`add` writes the answers file itself (the recorded answers plus the new op), so an answers
    file edited by hand since kernelgen wrote it would be applied silently, a package rename
    included. Refuse instead; `kernelgen update` is the command that applies such edits."""
    if recorded is None:
        return
    try:
        was = parse_answers(recorded.decode("utf-8"), f"{root / RECORD} (its copy of {ANSWERS_FILE})")
    except (AnswersError, UnicodeDecodeError):
        raise KernelgenError(f"{root / RECORD} is damaged (its copy of {ANSWERS_FILE} cannot be read); "
                             "restore it from version control") from None
    # The kernelgen version that wrote the file is a stamp, which add rewrites and which changes no output.
    was, now = ({k: v for k, v in d.items() if k != "_kernelgen_version"} for d in (was, answers))
    if was == now:
        return
    raise KernelgenError(
        f"{root / ANSWERS_FILE} was edited by hand since kernelgen wrote it ({_first_difference(was, now)}); "
        f"`kernelgen add` only adds an op: apply the edit with `kernelgen update {root}` (or undo it), then add the op"
    )


def _merge_one(rel: str, o: bytes | None, b: bytes | None, t: bytes | None, labels: tuple[str, str, str]) -> FileResult:
    if rel == ANSWERS_FILE:
        return FileResult(rel, "unchanged" if o == t else "updated", t)
    if o == t:
        return FileResult(rel, "unchanged", o)
    if t == b:
        return FileResult(rel, "kept", o, "your edits; the template did not change")
    if o == b:
        return FileResult(rel, "removed" if t is None else ("added" if b is None else "updated"), t)
    if o is None:
        if b is None:
            return FileResult(rel, "added", t)
        return FileResult(rel, "skipped", None, "you deleted it; the template changed it")
    if t is None:
        # Kept, since it holds the user's work, but the build no longer uses it: say so.
        return FileResult(rel, "orphaned", o, "you edited it, and the templates no longer produce it: "
                                              "it stays, but is no longer part of the op")
    if b is None:
        merged, clean = merge3(o, b"", t, labels)
        return FileResult(rel, "merged" if clean else "conflict", merged, "you and the templates both created it")
    merged, clean = merge3(o, b, t, labels)
    return FileResult(rel, "merged" if clean else "conflict", merged)


def apply(result: UpdateResult) -> None:
    """Write the planned files and the new ancestor record, all or nothing; nothing if up to date."""
    if not result.writes_anything:
        return
    changes: dict[str, bytes | None] = {}
    for item in result.changes:
        if item.action in ("skipped", "orphaned"):
            continue
        changes[item.path] = item.content
    for item in result.files:
        if item.moved_from and item.content is not None:
            changes[item.path] = item.content
            changes[item.moved_from] = None
    changes.update(result.record)
    if result.legacy_base:
        legacy = result.op_dir / LEGACY_BASE_DIR
        for path in sorted(legacy.rglob("*")):
            if path.is_file() and not path.is_symlink():
                changes[(Path(LEGACY_BASE_DIR) / path.relative_to(legacy)).as_posix()] = None
    fsutil.apply_changes(result.op_dir, changes)
    if result.legacy_base:
        legacy = result.op_dir / LEGACY_BASE_DIR
        for directory in sorted((p for p in legacy.rglob("*") if p.is_dir()), reverse=True):
            with contextlib.suppress(OSError):
                directory.rmdir()
        with contextlib.suppress(OSError):
            legacy.rmdir()


def diff(result: UpdateResult, item: FileResult) -> str:
    source = item.moved_from or item.path
    target = result.op_dir / source
    before = target.read_bytes().decode(errors="replace").splitlines(keepends=True) if target.is_file() else []
    after = (item.content or b"").decode(errors="replace").splitlines(keepends=True)
    return "".join(difflib.unified_diff(before, after, f"a/{source}", f"b/{item.path}"))

