"""Writing into a user's tree without ever leaving it, and all or nothing.

Every write of kernelgen goes through :func:`install`:

* targets are relative paths below one root; a path with ``..``, an absolute path, or one whose
  existing components include a symlink (``tests -> /elsewhere``) is refused, so a write never
  lands outside the root, whatever a cloned repository has planted;
* the new contents are first written into a staging directory inside the root, created by
  :func:`tempfile.mkdtemp` (exclusive creation, unpredictable name), then moved in with
  :func:`os.replace`; a file being replaced or deleted is moved into the staging directory
  first, and if any step fails every step before it is undone;
* staging directories carry the creating process id (``.kernelgen-staging-<pid>-XXXX``); one
  whose process is gone (killed with SIGKILL) is swept at the next run. SIGTERM is turned into
  an exception while kernelgen writes (:func:`terminate_as_exception`), so it cleans up as
  SIGINT does.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import stat
import tempfile
from collections.abc import Iterator, Mapping
from pathlib import Path, PurePosixPath

from .errors import DestinationError

STAGING_PREFIX = ".kernelgen-staging-"


class Terminated(BaseException):
    """SIGTERM arrived while kernelgen was writing (raised so that cleanup code runs)."""


@contextlib.contextmanager
def terminate_as_exception() -> Iterator[None]:
    """Within the block, SIGTERM raises :class:`Terminated` (main thread only)."""
    def handler(signum: int, frame: object) -> None:
        raise Terminated()

    try:
        previous = signal.signal(signal.SIGTERM, handler)
    except ValueError:  # not the main thread: leave signals alone
        yield
        return
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def sweep_stale_staging(directory: Path) -> list[Path]:
    """Remove staging directories in ``directory`` left by kernelgen runs that were killed."""
    removed: list[Path] = []
    try:
        entries = list(os.scandir(directory))
    except OSError:
        return removed
    for entry in entries:
        if not entry.name.startswith(STAGING_PREFIX) or not entry.is_dir(follow_symlinks=False):
            continue
        pid_text = entry.name[len(STAGING_PREFIX):].split("-", 1)[0]
        if pid_text.isdigit() and int(pid_text) != os.getpid() and not _pid_alive(int(pid_text)):
            shutil.rmtree(entry.path, ignore_errors=True)
            removed.append(Path(entry.path))
    return removed


def make_staging(directory: Path) -> Path:
    """A new, private staging directory inside ``directory`` (same file system: atomic renames)."""
    try:
        return Path(tempfile.mkdtemp(prefix=f"{STAGING_PREFIX}{os.getpid()}-", dir=directory))
    except OSError as err:
        raise DestinationError(f"cannot write to {directory}: {err.strerror}") from None


def check_relative(rel: str) -> PurePosixPath:
    path = PurePosixPath(rel)
    if path.is_absolute() or not path.parts or any(part in ("", ".", "..") for part in path.parts):
        raise DestinationError(f"refusing to write {rel!r}: not a plain path inside the package")
    return path


def safe_target(root: Path, rel: str) -> Path:
    """``root/rel``, after checking that no existing component of it is a symlink or a non-directory.

    The last component may be missing or a regular file. Raises :class:`DestinationError`.
    """
    parts = check_relative(rel).parts
    current = root
    for index, part in enumerate(parts):
        current = current / part
        try:
            info = os.lstat(current)
        except FileNotFoundError:
            return root.joinpath(*parts)
        except OSError as err:
            raise DestinationError(f"cannot inspect {current}: {err.strerror}") from None
        last = index == len(parts) - 1
        if stat.S_ISLNK(info.st_mode):
            raise DestinationError(f"refusing to write through the symlink {current}: kernelgen only writes "
                                   "inside the package; replace the link with a directory or file")
        if not last and not stat.S_ISDIR(info.st_mode):
            raise DestinationError(f"{current} is a file, but the package needs a directory there")
        if last and not stat.S_ISREG(info.st_mode):
            raise DestinationError(f"{current} is not a regular file, but the package needs one there")
    return root.joinpath(*parts)


def install(root: Path, changes: Mapping[str, bytes | None], staging: Path) -> None:
    """Apply ``changes`` (relative path -> new bytes, or None to delete) to ``root``, all or nothing.

    ``staging`` is a directory made by :func:`make_staging` inside ``root`` (or beside it, on the
    same file system); the caller removes it. File modes of replaced files are kept.
    """
    targets = {rel: safe_target(root, rel) for rel in sorted(changes)}  # every check before any write
    new_dir = staging / "new"
    backup_dir = staging / "backup"
    for rel, content in changes.items():
        if content is None:
            continue
        source = new_dir / rel
        source.parent.mkdir(parents=True, exist_ok=True)
        with open(source, "xb") as fh:  # exclusive creation inside our private directory
            fh.write(content)
        target = targets[rel]
        if target.is_file():
            shutil.copymode(target, source)
    done: list[tuple[Path, Path | None]] = []  # (target, its backup or None if it was new)
    created_dirs: list[Path] = []
    try:
        for rel, target in targets.items():
            saved = None
            if os.path.lexists(target):
                saved = backup_dir / rel
                saved.parent.mkdir(parents=True, exist_ok=True)
                os.replace(target, saved)
            done.append((target, saved))
            if changes[rel] is None:
                continue
            missing = []
            parent = target.parent
            while not parent.exists():
                missing.append(parent)
                parent = parent.parent
            for directory in reversed(missing):
                directory.mkdir()
                created_dirs.append(directory)
            os.replace(new_dir / rel, target)
    except BaseException as err:
        for target, saved in reversed(done):
            with contextlib.suppress(OSError):
                if os.path.lexists(target):
                    target.unlink()
                if saved is not None:
                    os.replace(saved, target)
        for directory in reversed(created_dirs):
            with contextlib.suppress(OSError):
                directory.rmdir()
        if isinstance(err, OSError):
            where = f" ({err.filename})" if err.filename else ""
            raise DestinationError(f"writing {root} failed: {err.strerror}{where}; nothing was changed") from None
        raise


def apply_changes(root: Path, changes: Mapping[str, bytes | None]) -> None:
    """:func:`install` ``changes`` into ``root`` through a fresh staging directory inside it, after
    sweeping the staging of killed runs; SIGTERM cleans up as SIGINT does."""
    sweep_stale_staging(root)
    staging = make_staging(root)
    try:
        with terminate_as_exception():
            install(root, changes, staging)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
