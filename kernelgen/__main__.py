"""The `kernelgen` command (`python -m kernelgen`, and the console script).

Importing click and kernelgen takes about 0.1 s, before any command has started. A Ctrl-C in that
time would print a KeyboardInterrupt traceback from the middle of an import, and one while click
parses the arguments would print click's "Aborted!", so SIGINT and SIGTERM are held back (blocked)
until a command starts, and acted on there, where kernelgen can say what happened: nothing, yet. This module imports nothing heavy, and neither does `kernelgen/__init__.py`, so what comes
before the signals are held back is only Python's own start-up.
"""

from __future__ import annotations

import signal
import sys


def _on_signal(signum: int, frame: object) -> None:
    """SIGINT raises KeyboardInterrupt and SIGTERM Terminated, so that the command unwinds and says
    what it did; once it is on its way out after one of them, further ones are ignored (one
    message, one exit code, and no traceback from a second Ctrl-C while it exits)."""
    from .fsutil import OUTCOME, Terminated

    if OUTCOME.exiting:
        return
    if signum == signal.SIGINT:
        raise KeyboardInterrupt
    raise Terminated()


def run() -> None:
    """Run the command line; exit with 130 on SIGINT and 143 on SIGTERM, without a traceback."""
    block = getattr(signal, "pthread_sigmask", None)  # POSIX only; elsewhere a Ctrl-C is caught below
    held = (signal.SIGINT, signal.SIGTERM)
    previous = block(signal.SIG_BLOCK, held) if block is not None else None
    try:
        from . import cli, fsutil

        # An interrupt raised where Python cannot propagate it (a weakref callback) is kept, not lost.
        sys.unraisablehook = fsutil.swallowed_interrupt(sys.unraisablehook)
        for signum in held:
            signal.signal(signum, _on_signal)
        if previous is not None:
            # Still held while click parses the arguments: the command group releases them when a
            # command starts (fsutil.release_startup_signals), where an interrupt gets its message.
            fsutil.hold_startup_signals(previous)
    except BaseException as err:  # without pthread_sigmask, a Ctrl-C can land in the imports
        if block is not None and previous is not None:
            block(signal.SIG_SETMASK, previous)
        if not isinstance(err, KeyboardInterrupt) and type(err).__name__ != "Terminated":
            raise
        _ignore(held)
        sys.stderr.write("kernelgen: interrupted; nothing was changed\n")
        sys.exit(130 if isinstance(err, KeyboardInterrupt) else 143)
    try:
        try:
            cli.main(prog_name="kernelgen")
        except BaseException as err:  # an interrupt outside a command (no pthread_sigmask to hold it)
            if not isinstance(err, KeyboardInterrupt) and type(err).__name__ != "Terminated":
                raise
            cli._interrupted(err)
    except SystemExit:
        _ignore(held)  # the command is over, and its exit code says how it ended
        raise


def _ignore(signals: tuple[int, ...]) -> None:
    """Ignore ``signals`` from now on: the command has ended, and Python would otherwise restore
    their default action while it shuts down, so that a late Ctrl-C would turn an exit code that
    says what happened into death by SIGINT."""
    for signum in signals:
        signal.signal(signum, signal.SIG_IGN)


if __name__ == "__main__":
    run()
