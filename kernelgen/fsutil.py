"""Writing into a user's tree without ever leaving it, all or nothing, one run at a time.

Every write of kernelgen goes through :func:`install`:

* targets are relative paths below one root; a path with ``..``, an absolute path, or one whose
  existing components include a symlink (``tests -> /elsewhere``) is refused, so a write never
  lands outside the root, whatever a cloned repository has planted;
* the new contents are first written into a staging directory inside the root, created by
  :func:`tempfile.mkdtemp` (exclusive creation, unpredictable name), then moved in with
  :func:`os.replace`; a file being replaced or deleted is moved into the staging directory
  first, and if any step fails every step before it is undone;
* while files are being moved in, rolled back or cleaned up, SIGINT, SIGTERM and SIGHUP are held
  back (:func:`deferred_signals`) and delivered when that is over, so an interrupt never stops the
  moves half-way and never deletes the staging directory while it holds the only copy of a file;
  :data:`OUTCOME` records what was really done, for the message of an interrupted run;
* staging directories carry the creating process id (``.kernelgen-staging-<pid>-XXXX``); one
  whose process is gone (killed with SIGKILL) is swept at the next run, unless it still holds
  files moved aside from the package (the run was killed while moving): then the next run refuses
  to write and names it. SIGTERM is turned into an exception while kernelgen writes
  (:func:`terminate_as_exception`), so it cleans up as SIGINT does.

:func:`package_lock` makes runs on one package take turns: ``add``, ``update`` and ``new --force``
hold an exclusive ``flock`` on the package directory while they read and write it.
"""

from __future__ import annotations

import contextlib
import errno
import os
import shutil
import signal
import stat
import tempfile
import time
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path, PurePosixPath
from typing import Any

from .errors import DestinationError

STAGING_PREFIX = ".kernelgen-staging-"
#: Written into a staging directory once every file is in place: what it still holds is obsolete.
_COMMITTED = "committed"
#: The signals held back while files move (each one would otherwise stop the moves half-way).
_DEFERRED = tuple(getattr(signal, name) for name in ("SIGINT", "SIGTERM", "SIGHUP") if hasattr(signal, name))
#: How long a run waits for another run on the same package, in seconds (KERNELGEN_LOCK_TIMEOUT).
LOCK_TIMEOUT = 5.0


class Terminated(BaseException):
    """SIGTERM arrived while kernelgen was writing (raised so that cleanup code runs)."""


class Outcome:
    """What the running command has done to the user's files: read by the message of a run that a
    signal interrupted, which must say "nothing was changed" only when that is true."""

    def __init__(self) -> None:
        self.reset()

    def reset(self, done: str = "the changes were written") -> None:
        self.applied = False  # every change is in place
        self.kept: Path | None = None  # where files that could not be put back are
        self.done = done  # what `applied` means, in words, for the message
        self.exiting = False  # the command is exiting after a signal: ignore further ones (kernelgen.__main__)
        self.pending: type[BaseException] | None = None  # an interrupt Python could not raise (swallowed_interrupt)


OUTCOME = Outcome()


def swallowed_interrupt(hook: Callable[[Any], object]) -> Callable[[Any], object]:
    """A ``sys.unraisablehook`` around ``hook`` that keeps the interrupts Python could not raise.

    A signal handler runs wherever Python is when the signal arrives. If that is a weakref callback or a
    ``__del__`` (importlib drops a module's lock through one after every import), the KeyboardInterrupt
    or Terminated it raises cannot propagate: Python prints "Exception ignored in ..." and goes on, and
    the command would run on as if no Ctrl-C had come. This hook records it in ``OUTCOME.pending``
    instead (nothing printed), and :func:`raise_pending` raises it where kernelgen next looks."""

    def keep(args: Any) -> object:
        if isinstance(args.exc_value, (KeyboardInterrupt, Terminated)):
            if OUTCOME.pending is None:
                OUTCOME.pending = type(args.exc_value)
            return None
        return hook(args)

    return keep


def raise_pending() -> None:
    """Raise the interrupt :func:`swallowed_interrupt` kept, if any: called where a run waits (the
    package lock) and when a command has returned, so that a swallowed Ctrl-C still ends the run with
    its one line and exit code."""
    pending, OUTCOME.pending = OUTCOME.pending, None
    if pending is not None and not OUTCOME.exiting:
        raise pending()


#: The signal mask from before kernelgen's entry point held SIGINT and SIGTERM back (kernelgen.__main__),
#: or None when nothing is held.
_STARTUP_MASK: set[int] | None = None


def hold_startup_signals(previous: set[int]) -> None:
    """Record that SIGINT and SIGTERM are blocked from start-up until a command runs: a signal in that
    time (Python importing, click parsing the arguments) waits, and the command acts on it, so that it
    ends with the command's one line and exit code, never click's "Aborted!" or a traceback."""
    global _STARTUP_MASK
    _STARTUP_MASK = previous


def release_startup_signals() -> None:
    """Restore the mask that :func:`hold_startup_signals` recorded: a signal held back since start-up
    is acted on now, by the caller's code. Does nothing when nothing is held."""
    global _STARTUP_MASK
    previous, _STARTUP_MASK = _STARTUP_MASK, None
    if previous is not None:
        signal.pthread_sigmask(signal.SIG_SETMASK, previous)


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


def _restore(handlers: dict[int, object]) -> None:
    for signum, handler in handlers.items():
        # None: a handler installed outside Python, which cannot be put back; the default is closest
        signal.signal(signum, signal.SIG_DFL if handler is None else handler)  # type: ignore[arg-type]


_deferring: list[int] | None = None  # the signals held back so far, while a deferred block runs


@contextlib.contextmanager
def deferred_signals() -> Iterator[None]:
    """Hold SIGINT, SIGTERM and SIGHUP back during the block, then deliver them (once each).

    The handlers that were in place before the block handle them afterwards, exactly as if they
    had arrived then: SIGINT raises KeyboardInterrupt, SIGTERM raises :class:`Terminated` inside
    :func:`terminate_as_exception`. Nested blocks deliver at the end of the outermost one. Outside
    the main thread (where no signal handler runs) the block runs as it is.
    """
    global _deferring
    if _deferring is not None:
        yield
        return
    pending: list[int] = []

    def hold(signum: int, frame: object) -> None:
        if signum not in pending:
            pending.append(signum)

    previous: dict[int, object] = {}
    try:
        for signum in _DEFERRED:
            previous[signum] = signal.signal(signum, hold)
    except ValueError:  # not the main thread
        _restore(previous)
        yield
        return
    _deferring = pending
    try:
        yield
    finally:
        _deferring = None
        _restore(previous)
        for signum in pending:
            signal.raise_signal(signum)  # runs the handler now: raises, or ends the process


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _holds_originals(staging: str | os.PathLike[str]) -> bool:
    """True if a staging directory holds files moved aside from the package that were never put
    back and are not obsolete (no commit marker): the only copies of what the package held."""
    if os.path.lexists(os.path.join(staging, _COMMITTED)):
        return False
    return any(files for _, _, files in os.walk(os.path.join(staging, "backup")))


def _staging_pid(name: str) -> int | None:
    pid_text = name[len(STAGING_PREFIX):].split("-", 1)[0]
    return int(pid_text) if pid_text.isdigit() else None


def sweep_stale_staging(directory: Path) -> list[Path]:
    """Remove staging directories in ``directory`` left by kernelgen runs that were killed, except
    those that still hold files moved aside from the package (see :func:`check_no_abandoned_staging`)."""
    removed: list[Path] = []
    try:
        entries = list(os.scandir(directory))
    except OSError:
        return removed
    for entry in entries:
        if not entry.name.startswith(STAGING_PREFIX) or not entry.is_dir(follow_symlinks=False):
            continue
        pid = _staging_pid(entry.name)
        if pid is not None and pid != os.getpid() and not _pid_alive(pid) and not _holds_originals(entry.path):
            shutil.rmtree(entry.path, ignore_errors=True)
            removed.append(Path(entry.path))
    return removed


def check_no_abandoned_staging(root: Path) -> None:
    """Refuse to write into ``root`` while a staging directory of a run that is gone holds files
    moved aside from it: that run stopped half-way (SIGKILL, power loss, a rollback that failed),
    so the package may be half-written, and those files may be the only copies of the user's."""
    try:
        entries = list(os.scandir(root))
    except OSError:
        return
    for entry in sorted(entries, key=lambda e: e.name):
        if not entry.name.startswith(STAGING_PREFIX) or not entry.is_dir(follow_symlinks=False):
            continue
        pid = _staging_pid(entry.name)
        if pid is not None and pid != os.getpid() and not _pid_alive(pid) and _holds_originals(entry.path):
            raise DestinationError(
                f"{entry.path} holds files that an interrupted kernelgen run moved aside and did not put back, "
                f"so {root} may be half-written: compare {os.path.join(entry.path, 'backup')} with the package, "
                f"restore what you need, then delete {entry.path} and run kernelgen again"
            )


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


class RollbackIncomplete(DestinationError):
    """A failed write could not be undone completely; the originals are kept in the staging directory."""


def install(root: Path, changes: Mapping[str, bytes | None], staging: Path) -> None:
    """Apply ``changes`` (relative path -> new bytes, or None to delete) to ``root``, all or nothing.

    ``staging`` is a directory made by :func:`make_staging` inside ``root`` (or beside it, on the
    same file system). On success it is removed, before any signal that arrived meanwhile is acted
    on; on failure the caller removes it, unless this raises :class:`RollbackIncomplete` (it then
    holds the only copies of files). File modes of replaced files are kept. Sets
    ``OUTCOME.applied`` once every change is in place.
    """
    targets = {rel: safe_target(root, rel) for rel in sorted(changes)}  # every check before any write
    new_dir = staging / "new"
    backup_dir = staging / "backup"
    for rel, content in changes.items():  # into the private staging directory: nothing is changed yet
        if content is None:
            continue
        source = new_dir / rel
        target = targets[rel]
        try:
            source.parent.mkdir(parents=True, exist_ok=True)
            with open(source, "xb") as fh:  # exclusive creation inside our private directory
                fh.write(content)
            if target.is_file():
                shutil.copymode(target, source)
        except OSError as err:
            raise DestinationError(f"writing {target} failed: {err.strerror}; nothing was changed") from None
    done: list[tuple[Path, Path | None]] = []  # (target, its backup or None if it was new)
    created_dirs: list[Path] = []
    current = root
    with deferred_signals():  # from the first move to the last (or the end of the rollback)
        try:
            for rel, target in targets.items():
                current = target
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
            not_restored, not_removed = _roll_back(done, created_dirs)
            reason = err.strerror if isinstance(err, OSError) and err.strerror else (str(err) or type(err).__name__)
            if not_restored:
                OUTCOME.kept = backup_dir
                extra = f", and could not remove {len(not_removed)} new file(s)" if not_removed else ""
                raise RollbackIncomplete(
                    f"writing {current} failed: {reason}; undoing it failed too: {len(not_restored)} file(s) could not "
                    f"be put back (first: {not_restored[0]}){extra}; the originals are kept in {backup_dir}: "
                    "copy them back into the package"
                ) from None
            if not_removed:
                raise DestinationError(
                    f"writing {current} failed: {reason}; every original is back, but {len(not_removed)} new "
                    f"file(s) could not be removed (first: {not_removed[0]})"
                ) from None
            if isinstance(err, OSError):
                raise DestinationError(f"writing {current} failed: {reason}; nothing was changed") from None
            raise
        with contextlib.suppress(OSError):  # what staging still holds is obsolete from now on
            (staging / _COMMITTED).touch()
        OUTCOME.applied = True
        remove_staging(staging)


def _roll_back(done: list[tuple[Path, Path | None]], created_dirs: list[Path]) -> tuple[list[Path], list[Path]]:
    """Undo the moves in ``done``, newest first; returns (targets not put back, new files not removed)."""
    not_restored: list[Path] = []
    not_removed: list[Path] = []
    for target, saved in reversed(done):
        try:
            if os.path.lexists(target):
                target.unlink()
        except OSError:
            (not_restored if saved is not None else not_removed).append(target)
            continue
        if saved is not None:
            try:
                os.replace(saved, target)
            except OSError:
                not_restored.append(target)
    for directory in reversed(created_dirs):
        with contextlib.suppress(OSError):
            directory.rmdir()
    return not_restored, not_removed


def remove_staging(staging: Path) -> None:
    """Delete a staging directory whose contents are obsolete, without being interrupted half-way."""
    with deferred_signals():
        shutil.rmtree(staging / "backup", ignore_errors=True)  # first, while the commit marker remains
        shutil.rmtree(staging, ignore_errors=True)


def apply_changes(root: Path, changes: Mapping[str, bytes | None]) -> None:
    """:func:`install` ``changes`` into ``root`` through a fresh staging directory inside it, after
    sweeping the staging of killed runs; SIGTERM cleans up as SIGINT does. A staging directory that
    holds the only copy of a file (a rollback that failed) is kept, and the error names it."""
    check_no_abandoned_staging(root)
    sweep_stale_staging(root)
    staging = make_staging(root)
    keep = False
    try:
        with terminate_as_exception():
            install(root, changes, staging)
    except RollbackIncomplete:
        keep = True
        raise
    finally:
        if not keep:
            remove_staging(staging)


# ---- one run per package at a time ------------------------------------------------------------------


def lock_timeout() -> float:
    """Seconds to wait for another run on the same package: KERNELGEN_LOCK_TIMEOUT, else LOCK_TIMEOUT."""
    text = os.environ.get("KERNELGEN_LOCK_TIMEOUT")
    if text is None or not text.strip():
        return LOCK_TIMEOUT
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not 0 <= value <= 24 * 3600:  # NaN fails this too
        raise DestinationError(f"KERNELGEN_LOCK_TIMEOUT must be a number of seconds (0 to 86400), not {text[:40]!r}")
    return value


def _lock_holder(info: os.stat_result) -> str:
    """Who holds the flock on the file ``info`` describes, in words: /proc/locks names the process."""
    key = f"{os.major(info.st_dev):02x}:{os.minor(info.st_dev):02x}:{info.st_ino}"
    try:
        with open("/proc/locks", encoding="ascii", errors="replace") as fh:
            lines = fh.read(1 << 20).splitlines()
    except OSError:
        return "another process"
    for line in lines:
        fields = line.split()
        # "1: FLOCK  ADVISORY  WRITE 12345 fe:00:2146580 0 EOF" (blocked waiters have a "->" field)
        if len(fields) >= 6 and fields[1] == "FLOCK" and fields[4].isdigit() and fields[5] == key:
            pid = int(fields[4])
            try:
                with open(f"/proc/{pid}/cmdline", "rb") as fh:
                    argv = [a.decode(errors="replace") for a in fh.read(4096).split(b"\0") if a]
            except OSError:
                return f"process {pid}, which has exited (a process it started may still hold the lock)"
            if len(argv) >= 3 and argv[1] == "-m":
                argv = argv[2:]
            elif argv and os.path.basename(argv[0]).startswith("python") and len(argv) >= 2:
                argv = argv[1:]
            command = " ".join([os.path.basename(argv[0]), *argv[1:]]) if argv else "?"
            command = command if len(command) <= 120 else command[:117] + "..."
            return f"process {pid} ({ascii(command)[1:-1]})"
    return "another process"


@contextlib.contextmanager
def package_lock(root: Path, timeout: float | None = None) -> Iterator[None]:
    """Hold an exclusive lock on the package directory ``root`` during the block.

    A second kernelgen run on the same package (``add``, ``update``, ``new --force``) waits up to
    ``timeout`` seconds (default :func:`lock_timeout`), then refuses with one line that names the
    process holding the lock. The lock is an ``flock`` on the directory itself, so nothing is
    written to take it and the kernel drops it when its holder dies: a lock is never stale.
    """
    wait = lock_timeout() if timeout is None else timeout
    try:
        import fcntl
    except ImportError:  # no flock on this platform: runs are not serialized
        yield
        return
    try:
        fd = os.open(root, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | getattr(os, "O_CLOEXEC", 0))
    except OSError as err:
        raise DestinationError(f"cannot open {root}: {err.strerror}") from None
    try:
        deadline = time.monotonic() + wait
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except OSError as err:
                if err.errno not in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
                    break  # a file system without flock: go on unlocked, as before locks existed
                if time.monotonic() >= deadline:
                    raise DestinationError(
                        f"{root} is in use by {_lock_holder(os.fstat(fd))}: kernelgen changes a package one run at a "
                        f"time; waited {wait:g} s (KERNELGEN_LOCK_TIMEOUT); run again when it has finished"
                    ) from None
                raise_pending()
                time.sleep(0.05)
        yield
    finally:
        os.close(fd)  # releases the lock
