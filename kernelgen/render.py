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

The merge ancestor that ``kernelgen update`` needs is recorded compactly, not as a second copy of
the sources: ``.kernelgen/generated.json.gz`` holds the exact generated text of every file (see
:func:`encode_record`). grep, code search, linters and review tools skip it as binary.
"""

from __future__ import annotations

import gzip
import json
import os
import tempfile
import time
import warnings
import zlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

from . import fsutil, paths
from .errors import DestinationError, RenderError
from .spec import OpSpec, PackageSpec, normalize_package_name

ANSWERS_FILE = ".copier-answers.yml"
#: The exact output of the templates for the recorded answers: the common ancestor that
#: `kernelgen update` and `kernelgen add` merge the user's edits and the current templates against.
RECORD = ".kernelgen/generated.json.gz"
RECORD_README = ".kernelgen/README.md"
#: Template versions 1 and 2 kept the ancestor as a full copy of every file in this directory.
LEGACY_BASE_DIR = ".kernelgen/base"
_RECORD_FORMAT = 1
_RECORD_README_TEXT = """\
# .kernelgen/

`generated.json.gz` records exactly what kernelgen generated for this package (the template
version is in `../.copier-answers.yml`). `kernelgen update` and `kernelgen add` use it as the
common ancestor of a 3-way merge between your edits and the current templates, and refresh it.
It is compressed so that it is not a second copy of the sources for grep, code search, linters
or review. Do not edit it; do commit it. `backup/` (if present) holds files `--force` replaced.
"""


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


def encode_record(files: dict[str, bytes]) -> bytes:
    """The compact ancestor record: gzip'd JSON of every generated file, reproducible byte for byte."""
    data = {
        "format": _RECORD_FORMAT,
        "files": {rel: files[rel].decode("utf-8", "surrogateescape") for rel in sorted(files)},
    }
    text = json.dumps(data, indent=0, sort_keys=True, ensure_ascii=True)
    return gzip.compress(text.encode("ascii"), compresslevel=9, mtime=0)


#: The most a record may expand to: 12 ops make 0.7 MB, so this fits hundreds of ops, and a damaged
#: or hostile record (a gzip bomb) costs at most this much memory and time.
MAX_RECORD_BYTES = 64 * 1024 * 1024


def read_record(path: Path) -> bytes:
    """The bytes of a record file, read only up to the size any real record has."""
    try:
        with open(path, "rb") as fh:
            blob = fh.read(MAX_RECORD_BYTES + 1)
    except OSError as err:
        raise RenderError(f"cannot read {path}: {err.strerror}") from None
    if len(blob) > MAX_RECORD_BYTES:
        raise RenderError(f"{path} is larger than {MAX_RECORD_BYTES >> 20} MiB: it is not a kernelgen record; "
                          "restore it from version control")
    return blob


def decode_record(blob: bytes, where: str) -> dict[str, bytes]:
    """The files recorded in ``blob``; decompressed with a size cap (:data:`MAX_RECORD_BYTES`)."""
    try:
        inflate = zlib.decompressobj(wbits=31)  # gzip, one member
        raw = inflate.decompress(blob, MAX_RECORD_BYTES + 1)
        if len(raw) > MAX_RECORD_BYTES:
            raise RenderError(f"{where} expands to more than {MAX_RECORD_BYTES >> 20} MiB: it is not a kernelgen "
                              "record; restore it from version control")
        if not inflate.eof or inflate.unused_data:
            raise ValueError("truncated" if not inflate.eof else "data after the end")
        data = json.loads(raw.decode("ascii"))
        if not isinstance(data, dict) or data.get("format") != _RECORD_FORMAT or not isinstance(data.get("files"), dict):
            raise ValueError("unknown format")
        return {str(rel): str(text).encode("utf-8", "surrogateescape") for rel, text in data["files"].items()}
    except (zlib.error, ValueError, AttributeError, UnicodeError, RecursionError) as err:
        raise RenderError(f"{where} is damaged ({err}); restore it from version control") from None


def with_record(files: dict[str, bytes]) -> dict[str, bytes]:
    """``files`` plus the ancestor record of them and its README."""
    return {**files, RECORD: encode_record(files), RECORD_README: _RECORD_README_TEXT.encode()}


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
            _write_forced(dest, files, report)
        return dest
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
    return dest


def _write_forced(dest: Path, files: dict[str, bytes], report: Callable[[str], None] | None) -> None:
    """--force into an existing directory: back up every file whose content changes, then install."""
    changes: dict[str, bytes | None] = {}
    stamp = time.strftime("%Y%m%d-%H%M%S")
    backed_up = []
    for rel, content in files.items():
        target = fsutil.safe_target(dest, rel)
        if target.is_file():
            old = target.read_bytes()
            if old == content:
                continue
            if not rel.startswith(".kernelgen/"):
                changes[f".kernelgen/backup/{stamp}/{rel}"] = old
                backed_up.append(rel)
        changes[rel] = content
    if not changes:
        return
    fsutil.apply_changes(dest, changes)
    if backed_up and report is not None:
        report(f"note: --force replaced {len(backed_up)} file(s); the previous versions are in "
               f"{dest / '.kernelgen' / 'backup' / stamp}")
