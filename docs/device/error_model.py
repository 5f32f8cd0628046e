"""Issue 25's GPU evidence: the generated tests never fail a correct kernel and catch every mutant.

On the dev machine (needs copier; writes .device/errmodel/, which git ignores; carry it):

    python docs/device/error_model.py prepare [--sweep-count 40]

writes, under .device/errmodel/:
  * examples_double/<example>/   copies of examples/ whose C++ (and Triton) ops evaluate their formula in
                                 double and round once (tests/mutants.py: formula_in_double): correct
                                 kernels with other rounding;
  * sweep/sweep-ops/             the elementwise expression sweep (docs/device/sweep.py, seed 13, 40 ops);
  * sweep_double/sweep-ops/      the same with every formula in double;
  * rsweep/rsweep-ops/           the rowwise expression sweep (docs/device/rowwise_sweep.py, seed 28, 40
                                 expressions, each on both backends), and rsweep_double/ in double;
  * mutants/<id>/<package>/      one single-op package per mutant of tests/mutants.py (formula, cuda and
                                 triton ones), and base_<op>/ unchanged; mutants/manifest.json lists them.

On the GPU machine, from the repository root (carry .device/errmodel), one call each, logs under $OUT:

    python docs/device/error_model.py run examples [--repeat 3]   # build examples/, run every suite 3 times,
                                                                  # with seeds 0, 1, 2 (KERNELGEN_TEST_SEED)
    python docs/device/error_model.py run examples-double         # the examples with the formula in double
    python docs/device/error_model.py run sweep [--part 1/2]      # the sweep package's 40 suites (or a part)
    python docs/device/error_model.py run sweep-double [--part 1/2]
    python docs/device/error_model.py run rsweep [--part 1/2]     # the rowwise sweep's suites; rsweep-double
    python docs/device/error_model.py run mutants                 # every CUDA and Triton mutant, plus the
                                                                  # unchanged ops and their formula in double
    python docs/device/error_model.py ratios PACKAGE_ROOT [--device cuda]   # bound against observed error

`run` builds what it needs (all packages at once, TORCH_CUDA_ARCH_LIST=9.0, KERNELGEN_NO_CUTLASS=1 unless
--cutlass, the system g++ unless KG_CXX), runs the suites --jobs at a time on the one GPU, and prints a
table last: per suite and repetition the passed / failed / error / skipped counts, or per mutant the
first test that caught it. Options: --jobs N (suites at once, default 6), --pytest "ARGS" (extra pytest
arguments, e.g. "-m 'not large'"), --time-limit S (stop starting suites after S seconds, default 540).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
DEFAULT_DIR = REPO / ".device" / "errmodel"
EXAMPLES = ("muladd", "matmul", "rmsnorm", "myteam-ops")
OUT = Path(os.environ.get("OUT") or "/tmp/out")


def _mutants():
    spec = importlib.util.spec_from_file_location("mutants", REPO / "tests" / "mutants.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["mutants"] = module
    spec.loader.exec_module(module)
    return module


def _sweep():
    spec = importlib.util.spec_from_file_location("sweep", REPO / "docs" / "device" / "sweep.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _in_double(root: Path, mutants) -> int:
    """Every op of the package at ``root`` computing its formula in double: the count of ops changed."""
    changed = 0
    package = next(p for p in root.iterdir() if (p / "_build.py").is_file())
    for op_dir in sorted((package / "csrc").iterdir()) if (package / "csrc").is_dir() else []:
        if op_dir.is_dir() and mutants.formula_in_double(op_dir):
            changed += 1
    for ops_file in sorted((package / "ops").glob("*.py")):
        changed += mutants.triton_in_double(ops_file)
    return changed


def _copy(src: Path, dst: Path) -> None:
    skip = shutil.ignore_patterns("build", "__pycache__", "*.so", "_build_info.json", "*.egg-info", ".pytest_cache")
    shutil.copytree(src, dst, ignore=skip)


# ---- prepare (dev machine) ----------------------------------------------------------------------

def _rowwise_sweep():
    spec = importlib.util.spec_from_file_location("rowwise_sweep", REPO / "docs" / "device" / "rowwise_sweep.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def prepare(directory: Path, sweep_count: int, rsweep_count: int = 40) -> None:
    mutants = _mutants()
    if directory.exists():
        shutil.rmtree(directory)
    directory.mkdir(parents=True)
    for name in EXAMPLES:
        _copy(REPO / "examples" / name, directory / "examples_double" / name)
        print(f"examples_double/{name}: {_in_double(directory / 'examples_double' / name, mutants)} ops in double")
    sweep = _sweep()
    sweep.generate(directory / "sweep", seed=13, count=sweep_count)
    _copy(directory / "sweep" / "sweep-ops", directory / "sweep_double" / "sweep-ops")
    print(f"sweep: {sweep_count} ops; sweep_double: {_in_double(directory / 'sweep_double' / 'sweep-ops', mutants)} in double")
    if rsweep_count:
        _rowwise_sweep().generate(directory / "rsweep", seed=28, count=rsweep_count)
        _copy(directory / "rsweep" / "rsweep-ops", directory / "rsweep_double" / "rsweep-ops")
        in_double = _in_double(directory / "rsweep_double" / "rsweep-ops", mutants)
        print(f"rsweep: {rsweep_count} expressions on both backends; rsweep_double: {in_double} in double")

    # One package per op, kgmut_<op>, so that a mutant's build compiles one op.
    base = directory / "mutants"
    manifest = []
    for op, (_, backend, options) in mutants.OPS.items():
        package = f"kgmut_{op}"
        args = ["new", package, "--op", op, *options, "--namespace", "kgmut", "--defaults", "--output", str(base / f"base_{op}")]
        done = subprocess.run([sys.executable, "-m", "kernelgen", *args], capture_output=True, text=True, cwd=REPO)
        if done.returncode != 0:
            sys.exit(f"kernelgen {' '.join(args)} failed: {done.stderr.strip()}")
        root = base / f"base_{op}" / package
        manifest.append({"id": f"base_{op}", "op": op, "backend": backend, "root": str(root.relative_to(REPO)),
                         "where": "none", "what": "the op as generated"})
        double = base / f"double_{op}" / package
        _copy(root, double)
        _in_double(double, mutants)
        manifest.append({"id": f"double_{op}", "op": op, "backend": backend, "root": str(double.relative_to(REPO)),
                         "where": "none", "what": "the formula evaluated in double (a correct kernel)"})
    for mutant in mutants.MUTANTS:
        if mutant.where == "cpu":
            continue  # the CPU loop's mutants run in kernelgen's own suite (tests/test_error_model.py)
        package = f"kgmut_{mutant.op}"
        root = base / mutant.id / package
        _copy(base / f"base_{mutant.op}" / package, root)
        mutants.apply(root, mutant, package=package)
        manifest.append({"id": mutant.id, "op": mutant.op, "backend": mutants.OPS[mutant.op][1],
                         "root": str(root.relative_to(REPO)), "where": mutant.where, "what": mutant.what})
    (base / "manifest.json").write_text(json.dumps(manifest, indent=1) + "\n")
    print(f"mutants: {len(manifest)} packages in {base.relative_to(REPO)} (manifest.json)")


# ---- run (GPU machine) --------------------------------------------------------------------------

#: --cpu-only (a dry run of this script on a machine without a GPU): CPU-only builds.
CPU_ONLY = False
#: --only: the mutants (ids containing one of these words) or suites (test files) to run.
ONLY: list[str] = []


def _env(cutlass: bool) -> dict[str, str]:
    env = dict(os.environ)
    env.update(PYTHONUNBUFFERED="1", TORCH_CUDA_ARCH_LIST=env.get("TORCH_CUDA_ARCH_LIST", "9.0"),
               CXX=env.get("KG_CXX", "/usr/bin/g++"), CC=env.get("KG_CC", "/usr/bin/gcc"))
    env["KERNELGEN_CPU_ONLY" if CPU_ONLY else "KERNELGEN_REQUIRE_CUDA"] = "1"
    if not cutlass:
        env["KERNELGEN_NO_CUTLASS"] = "1"
    return env


def _log_name(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", text)


def build(roots: list[Path], cutlass: bool, cores: int = 16) -> dict[Path, str]:
    """Builds every package with a C++ op, all at once, cores shared by their op counts: root -> status."""
    need = [root for root in roots if any(root.glob("*/csrc/*/cuda/*_kernel.cu"))]
    weights = {root: max(1, len(list(root.glob("*/csrc/*/cuda/*_kernel.cu")))) for root in need}
    total = sum(weights.values()) or 1
    status = {root: "no C++ ops" for root in roots}

    def one(root: Path) -> tuple[Path, str]:
        jobs = max(1, round(cores * weights[root] / total)) if len(need) > 1 else cores
        env = {**_env(cutlass), "MAX_JOBS": str(jobs)}
        start = time.time()
        with open(OUT / f"build_{_log_name(str(root.relative_to(REPO)))}.log", "w") as log:
            done = subprocess.run([sys.executable, "setup.py", "build_ext", "--inplace"], cwd=root, env=env,
                                  stdout=log, stderr=subprocess.STDOUT)
        return root, f"{'built' if done.returncode == 0 else 'BUILD FAILED'} in {time.time() - start:.0f} s"

    with ThreadPoolExecutor(max_workers=max(1, min(len(need), cores))) as pool:
        for root, text in pool.map(one, need):
            status[root] = text
            print(f"  {root.relative_to(REPO)}: {text}", flush=True)
    return status


_COUNTS = re.compile(r"(\d+) (passed|failed|errors?|skipped|deselected|xfailed|xpassed)")


def counts(text: str) -> dict[str, int]:
    """pytest's last summary line as counts."""
    lines = [line for line in text.strip().splitlines() if " in " in line and _COUNTS.search(line)]
    found: dict[str, int] = {}
    for number, word in _COUNTS.findall(lines[-1] if lines else ""):
        found["errors" if word.startswith("error") else word] = int(number)
    return found


def run_suite(root: Path, label: str, args: list[str], cutlass: bool, seed: int = 0) -> dict:
    """One generated suite; ``seed`` offsets every seed it draws arguments with (KERNELGEN_TEST_SEED)."""
    start = time.time()
    log_path = OUT / f"test_{_log_name(label)}.log"
    with open(log_path, "w") as log:
        done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-rfE", "-p", "no:cacheprovider", *args], cwd=root,
                              env={**_env(cutlass), "KERNELGEN_TEST_SEED": str(seed)}, stdout=log, stderr=subprocess.STDOUT)
    text = log_path.read_text(errors="replace")
    first = re.search(r"^(?:FAILED|ERROR) (\S+)", text, re.MULTILINE)
    return {"label": label, "rc": done.returncode, "seconds": round(time.time() - start), **counts(text),
            "first_failure": first.group(1) if first else None, "log": log_path.name}


def _suites_of(root: Path, part: str) -> list[Path]:
    files = [f for f in sorted((root / "tests").glob("test_*.py")) if not ONLY or any(word in f.stem for word in ONLY)]
    index, count = (int(v) for v in part.split("/"))
    return [f for i, f in enumerate(files) if i % count == index - 1]


def run(what: str, directory: Path, repeat: int, jobs: int, part: str, extra: list[str], cutlass: bool,
        time_limit: float, first_seed: int = 0) -> None:
    OUT.mkdir(parents=True, exist_ok=True)
    started = time.time()
    if what == "mutants":
        return run_mutants(directory, jobs, extra, cutlass, time_limit)
    roots = {
        "examples": [REPO / "examples" / name for name in EXAMPLES],
        "examples-double": [directory / "examples_double" / name for name in EXAMPLES],
        "sweep": [directory / "sweep" / "sweep-ops"],
        "sweep-double": [directory / "sweep_double" / "sweep-ops"],
        "rsweep": [directory / "rsweep" / "rsweep-ops"],
        "rsweep-double": [directory / "rsweep_double" / "rsweep-ops"],
    }[what]
    for root in roots:
        if not root.is_dir():
            sys.exit(f"{root} is missing: run `python docs/device/error_model.py prepare` on the dev machine and carry .device/errmodel")
    print(f"== build ({what})", flush=True)
    status = build(roots, cutlass)
    failed = [root for root, text in status.items() if text.startswith("BUILD FAILED")]
    tasks = []
    # Repetition k draws its arguments with seed first_seed + k - 1: each run tests other inputs.
    for seed in range(first_seed, first_seed + repeat):
        for root in roots:
            if root in failed:
                continue
            for suite in _suites_of(root, part):
                label = f"{what}_{root.name}_{suite.stem}_seed{seed}"
                tasks.append((root, label, [str(suite.relative_to(root)), *extra], seed))
    print(f"== {len(tasks)} suite runs, {jobs} at a time", flush=True)
    results = []

    def one(task):
        root, label, args, seed = task
        if time.time() - started > time_limit:
            return {"label": label, "rc": None, "skipped_by_time_limit": True}
        result = run_suite(root, label, args, cutlass, seed)
        print(f"  {label}: rc={result['rc']} {result.get('passed', 0)} passed, {result.get('failed', 0)} failed, "
              f"{result.get('errors', 0)} errors in {result['seconds']} s", flush=True)
        return result

    with ThreadPoolExecutor(max_workers=jobs) as pool:
        results = list(pool.map(one, tasks))
    (OUT / f"summary_{what}{'_part' + part.replace('/', 'of') if part != '1/1' else ''}.json").write_text(
        json.dumps({"what": what, "repeat": repeat, "part": part, "pytest": extra, "builds":
                    {str(k.relative_to(REPO)): v for k, v in status.items()}, "results": results}, indent=1) + "\n")
    print(f"\n== {what}: per suite and run (logs in $OUT)")
    print(f"{'suite':70s} {'passed':>7s} {'failed':>7s} {'errors':>7s} {'skipped':>8s} {'s':>5s}")
    total: dict[str, int] = {}
    for r in results:
        if r.get("skipped_by_time_limit"):
            print(f"{r['label']:70s} not run (time limit)")
            total["not run"] = total.get("not run", 0) + 1
            continue
        for key in ("passed", "failed", "errors", "skipped"):
            total[key] = total.get(key, 0) + r.get(key, 0)
        print(f"{r['label']:70s} {r.get('passed', 0):7d} {r.get('failed', 0):7d} {r.get('errors', 0):7d} "
              f"{r.get('skipped', 0):8d} {r['seconds']:5d}" + (f"  first: {r['first_failure']}" if r.get("first_failure") else ""))
    for root in failed:
        print(f"BUILD FAILED: {root.relative_to(REPO)} (see build_*.log)")
    print(f"TOTAL {what}: " + ", ".join(f"{v} {k}" for k, v in total.items()) + f"; builds failed: {len(failed)}")


def run_mutants(directory: Path, jobs: int, extra: list[str], cutlass: bool, time_limit: float) -> None:
    started = time.time()
    manifest = json.loads((directory / "mutants" / "manifest.json").read_text())
    if ONLY:
        manifest = [item for item in manifest if any(word in item["id"] for word in ONLY)]
    roots = [REPO / item["root"] for item in manifest]
    print(f"== build {len(roots)} mutant packages", flush=True)
    status = build(roots, cutlass)

    def one(item):
        root = REPO / item["root"]
        if status.get(root, "").startswith("BUILD FAILED"):
            return {**item, "result": "BUILD FAILED"}
        if time.time() - started > time_limit:
            return {**item, "result": "not run (time limit)"}
        mutated = item["where"] != "none"
        # Only the CUDA implementation's tests: a test id with "cpu" runs the CPU loop (kernelgen's own
        # suite checks that), or a Triton op's CPU implementation, which is the reference.
        args = [f"tests/test_{item['op']}.py", "-k", "not cpu", *(["-x"] if mutated else []), *extra]
        result = run_suite(root, f"mutant_{item['id']}", args, cutlass)
        if mutated:
            caught = result["rc"] == 1 and result["first_failure"]
            verdict = f"caught by {result['first_failure'].split('::')[-1]}" if caught else f"NOT CAUGHT (rc={result['rc']})"
        else:
            verdict = "passes" if result["rc"] == 0 and not result.get("failed") else f"FAILS (rc={result['rc']})"
        print(f"  {item['id']}: {verdict}", flush=True)
        return {**item, **result, "result": verdict}

    with ThreadPoolExecutor(max_workers=jobs) as pool:
        results = list(pool.map(one, manifest))
    (OUT / "summary_mutants.json").write_text(json.dumps(results, indent=1) + "\n")
    print("\n== mutants (CUDA tests only: pytest -k 'not cpu'; logs in $OUT)")
    print(f"{'mutant':26s} {'backend':8s} {'where':8s} {'result':66s} what")
    bad = 0
    for r in results:
        print(f"{r['id']:26s} {r['backend']:8s} {r['where']:8s} {r['result']:66s} {r['what']}")
        bad += not (r["result"].startswith("caught") or r["result"] == "passes")
    print(f"TOTAL mutants: {sum(r['where'] != 'none' for r in results)} planted, "
          f"{sum(r['result'].startswith('caught') for r in results)} caught; unchanged and double: "
          f"{sum(r['result'] == 'passes' for r in results)} of {sum(r['where'] == 'none' for r in results)} pass; problems: {bad}")


# ---- ratios: the bound against the error a kernel makes ---------------------------------------

def ratios(root: Path, device: str, ops: list[str]) -> None:
    """For every op of the built package at ``root`` (or ``ops``), every dtype: the largest error of the op
    against the exact result, the bound at that element, and the worst error / bound over all elements."""
    import torch

    sys.path.insert(0, str(root))
    rows = []
    for test_file in sorted((root / "tests").glob("test_*.py")):
        op = test_file.stem[5:]
        if ops and op not in ops:
            continue
        spec = importlib.util.spec_from_file_location(f"kg_ratio_{op}", test_file)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        # The op's suite (its Test* class over the package's testing/<kind>.py) makes the arguments and bounds.
        suite = next(value for name, value in vars(module).items() if name.startswith("Test"))()
        for dtype in suite.op.dtypes:
            if hasattr(suite, "make_inputs"):  # elementwise
                cases = [("1000003", suite.make_inputs((1000003,), dtype, device))]
                call = [(label, args, suite.op.overload(*args), suite.expected_and_bound(args)) for label, args in cases]
            elif hasattr(suite, "make_args"):  # rowwise
                cases = [(f"64x{c}", suite.make_args((64, c), dtype, device, seed=c)) for c in (1000, 16384)]
                call = [(label, args, suite.op.overload(*args), suite.expected_and_bound(args)) for label, args in cases]
            else:  # matmul
                suite_class = next(c for c in type(suite).__mro__ if c.__name__ == "MatmulSuite")
                make = sys.modules[suite_class.__module__].make
                call = []
                for m, k, n in ((256, 4096, 256), (127, 129, 255)):
                    a, b = make((m, k), dtype, device, 0), make((k, n), dtype, device, 1)
                    call.append((f"{m}x{k}x{n}", (a, b), suite.run(a, b), suite.expected_and_bound(a, b)))
            for label, _, out, (want, bound) in call:
                error = (out.double() - want).abs().flatten()
                bound = torch.broadcast_to(bound, want.shape).flatten()
                worst = int(error.argmax())
                ratio = error / bound
                rows.append((op, str(dtype).replace("torch.", ""), label, float(error[worst]), float(bound[worst]),
                             float(ratio.max()), float(bound.median())))
    print(f"{'op':14s} {'dtype':9s} {'shape':14s} {'max error':>10s} {'its bound':>10s} {'bound/error':>11s} "
          f"{'worst err/bound':>15s} {'median bound':>12s}")
    for op, dtype, label, err, bnd, worst, median in rows:
        headroom = f"{bnd / err:.3g}" if err > 0 else "exact"
        print(f"{op:14s} {dtype:9s} {label:14s} {err:10.3g} {bnd:10.3g} {headroom:>11s} {worst:15.3g} {median:12.3g}")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("prepare", help="dev machine: write .device/errmodel (needs copier)")
    p.add_argument("--dir", type=Path, default=DEFAULT_DIR)
    p.add_argument("--sweep-count", type=int, default=40)
    p.add_argument("--rsweep-count", type=int, default=40, help="rowwise sweep expressions (each on both backends)")
    r = sub.add_parser("run", help="GPU machine: build and run suites or mutants")
    r.add_argument("what", choices=["examples", "examples-double", "sweep", "sweep-double", "rsweep", "rsweep-double",
                                    "mutants"])
    r.add_argument("--dir", type=Path, default=DEFAULT_DIR)
    r.add_argument("--repeat", type=int, default=1, help="runs of each suite, each with its own seed")
    r.add_argument("--first-seed", type=int, default=0, help="KERNELGEN_TEST_SEED of the first run")
    r.add_argument("--jobs", type=int, default=6)
    r.add_argument("--part", default="1/1", help="I/N: every N-th suite from the I-th (1-based)")
    r.add_argument("--pytest", default="", help="extra pytest arguments, one string")
    r.add_argument("--cutlass", action="store_true", help="build the matmul ops' CUTLASS sm_90a path too")
    r.add_argument("--time-limit", type=float, default=540.0)
    r.add_argument("--cpu-only", action="store_true", help="a dry run without a GPU: CPU-only builds")
    r.add_argument("--only", default="", help="comma-separated words: only mutants / test files whose name has one")
    q = sub.add_parser("ratios", help="the bound against the observed error, per op and dtype")
    q.add_argument("root", type=Path)
    q.add_argument("--device", default="cpu")
    q.add_argument("--ops", default="")
    args = parser.parse_args(argv)
    if args.command == "prepare":
        prepare(args.dir.resolve(), args.sweep_count, args.rsweep_count)
    elif args.command == "run":
        global CPU_ONLY, ONLY
        CPU_ONLY = args.cpu_only
        ONLY = [word for word in args.only.split(",") if word]
        run(args.what, args.dir.resolve(), args.repeat, args.jobs, args.part, shlex.split(args.pytest), args.cutlass,
            args.time_limit, args.first_seed)
    else:
        ratios(args.root.resolve(), args.device, [o for o in args.ops.split(",") if o])


if __name__ == "__main__":
    main()
