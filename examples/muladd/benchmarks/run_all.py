"""Run the benchmark of every op of muladd, one after another.

    python benchmarks/run_all.py [--dtypes float32,bfloat16] [--sizes ...] [--json-dir DIR]

Each benchmarks/bench_<op>.py runs in its own process (a crash or an out-of-memory in one does
not hide the others) with the same arguments; --json-dir DIR writes DIR/bench_<op>.json. The exit
code is non-zero if any benchmark failed. --sizes means elements to an elementwise benchmark and the
matrix side to a matmul one: give it to one bench_<op>.py at a time.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__.splitlines()[0],
        epilog="Every other argument (--dtypes, --sizes, --device, --json, --plot, --no-compile, --rounds, ...) "
               "is passed to each bench_<op>.py: python benchmarks/bench_<op>.py --help lists them.")
    parser.add_argument("--json-dir", type=Path, default=None, help="write DIR/bench_<op>.json")
    args, passthrough = parser.parse_known_args()
    # The package must be built to run any benchmark: say so once, on one line, before running them.
    sys.path[:0] = [str(HERE), str(HERE.parent)]
    import harness

    harness.import_package("muladd")
    scripts = sorted(HERE.glob("bench_*.py"))
    failed = []
    for script in scripts:
        extra = []
        if args.json_dir is not None:
            args.json_dir.mkdir(parents=True, exist_ok=True)
            extra = ["--json", str(args.json_dir / f"{script.stem}.json")]
        print(f"== {script.name}", flush=True)
        if subprocess.run([sys.executable, str(script), *passthrough, *extra]).returncode != 0:
            failed.append(script.name)
    if failed:
        print(f"failed: {', '.join(failed)}", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
