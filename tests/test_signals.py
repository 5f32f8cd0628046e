"""Interrupted runs leave nothing behind: SIGTERM cleans up like SIGINT; SIGKILL's leftovers are swept."""

from __future__ import annotations

import signal
import subprocess
import sys
import textwrap
import time

from click.testing import CliRunner

from kernelgen.cli import main

# Slow down the writing of the staging directory so that the signal lands in the middle of it.
_SLOW_NEW = textwrap.dedent("""
    import sys, time
    import kernelgen.fsutil as fsutil
    from kernelgen.cli import main
    real = fsutil.check_relative
    def slow(rel):
        time.sleep(0.2)
        return real(rel)
    fsutil.check_relative = slow
    sys.argv = ["kernelgen", "new", "muladd", "--inputs", "a,b,c", "--expr", "a*b+c", "--defaults", "-o", sys.argv[1]]
    main()
""")


def test_sigterm_during_new_leaves_nothing(tmp_path):
    proc = subprocess.Popen([sys.executable, "-c", _SLOW_NEW, str(tmp_path)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 60
    while not any(p.name.startswith(".kernelgen-staging-") for p in tmp_path.iterdir()):
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline, "staging never appeared"
        time.sleep(0.05)
    time.sleep(0.3)
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 143, err
    assert "interrupted; nothing was changed" in err and "Traceback" not in err
    assert list(tmp_path.iterdir()) == []


def test_staging_of_a_killed_run_is_swept_by_the_next(tmp_path):
    stale = tmp_path / ".kernelgen-staging-999999999-xyz"
    (stale / "out").mkdir(parents=True)
    alive = tmp_path / f".kernelgen-staging-{__import__('os').getpid()}-mine"  # a live process's: kept
    alive.mkdir()
    result = CliRunner().invoke(main, ["new", "op", "--inputs", "x", "--expr", "x", "--defaults", "-o", str(tmp_path)])
    assert result.exit_code == 0, result.output
    assert not stale.exists() and alive.exists()
