"""Issue 27: template version 9's H100 figures (docs/results/lean/h100_v9/, made by docs/device/v9_speed.sh)
against the figures docs/benchmarks.md quotes, cell by cell. Dev machine, no GPU:

    python docs/device/v9_compare.py [NOW_DIR]  > docs/results/lean/h100_v9/compare.txt

Before: the sweep's stop 23 runs 8, 9 and 11 (docs/results/sweep/stop23), the elementwise examples'
tables (docs/results/bench_*.txt and their reruns), matmul stop 22, the Triton ops' stop 23 tables,
the rowwise stop 22 tables at 2^26. "now/before" is a ratio of times (below 1: faster now); a ratio to
a baseline measured in the same run is compared as now/before of that ratio (above 1: better now).
Noise is what the same kernels moved between two runs before (a rerun) or now (runs 6 and 7).
"""

from __future__ import annotations

import json
import re
import statistics as st
import sys
from pathlib import Path

RESULTS = Path(__file__).resolve().parents[1] / "results"
DTYPES = ["float32", "float64", "float16", "bfloat16"]


def rows(path: Path) -> dict[tuple[str, str], dict]:
    return {(r["dtype"], r["shape"]): r for r in json.loads(path.read_text())["rows"]}


def table(path: Path) -> dict[tuple[str, str], dict[str, float]]:
    """A harness table (.txt): (dtype, size) -> column -> value ('x' and '%' stripped)."""
    lines = path.read_text().splitlines()
    head = next(i for i, line in enumerate(lines) if line.strip().startswith("dtype"))
    names = re.split(r"\s{2,}", lines[head].strip())
    found = {}
    for line in lines[head + 2:]:
        cells = line.split()
        if len(cells) != len(names):
            break
        found[(cells[0], cells[1])] = {n: float(c.rstrip("x%")) for n, c in zip(names[2:], cells[2:], strict=True)}
    return found


def spread(values: list[float]) -> str:
    values = sorted(values)
    return f"median {st.median(values):.4f}, min {values[0]:.4f}, max {values[-1]:.4f}"


def sweep(now: Path) -> None:
    s23 = RESULTS / "sweep" / "stop23"
    load = lambda p: {(r["op"], r["dtype"]): r for r in json.loads(p.read_text())["rows"]}  # noqa: E731
    before = {"run 11": load(s23 / "run11_final.json"), "run 8": load(s23 / "run8_narrow_light.json"),
              "run 9": load(s23 / "run9_narrow_light.json")}
    runs = {"run 6": load(now / "sweep_6.json"), "run 7": load(now / "sweep_7.json")}
    print("## Expression sweep, 2^28, ratio to torch.compile (min / median / max over 40 expressions)\n")
    print("| dtype | now run 6 | now run 7 | stop 23 run 11 (docs) | stop 23 run 8 | stop 23 run 9 |")
    print("|---|---|---|---|---|---|")
    for dtype in DTYPES:
        cells = []
        for data in (*runs.values(), *before.values()):
            v = [r["vs_compile"] for (op, dt), r in data.items() if dt == dtype]
            cells.append(f"{min(v):.3f} / {st.median(v):.4f} / {max(v):.3f}")
        print(f"| {dtype} | " + " | ".join(cells) + " |")
    print("\nRuns 8 and 9 had the final kernels for float32, float16 and bfloat16 only (float64's pack cap changed"
          " after them).\n")
    print("Per cell (160 cells), now/before:\n")
    print("| pair | ours (time) | torch.compile (time) | ratio to compile | cells off by >1% / >2% (ratio) |")
    print("|---|---|---|---|---|")
    pairs = [("run 6 / run 11", runs["run 6"], before["run 11"]), ("run 7 / run 11", runs["run 7"], before["run 11"]),
             ("run 7 / run 6 (noise now)", runs["run 7"], runs["run 6"]),
             ("run 9 / run 8 (noise then)", before["run 9"], before["run 8"])]
    for name, a, b in pairs:
        r = [a[k]["vs_compile"] / b[k]["vs_compile"] for k in a]
        print(f"| {name} | {spread([a[k]['us'] / b[k]['us'] for k in a])} | "
              f"{spread([a[k]['compile_us'] / b[k]['compile_us'] for k in a])} | {spread(r)} | "
              f"{sum(abs(x - 1) > 0.01 for x in r)} / {sum(abs(x - 1) > 0.02 for x in r)} |")
    # Run 11 was a force-packs build (every pack count compiled): compare the pack counts this build has.
    mine = {k: r.get("registers_by_packs") or {} for k, r in runs["run 6"].items()}
    regs = sum(bool(v) and all(before["run 11"][k].get("registers_by_packs", {}).get(p) == n for p, n in v.items())
               for k, v in mine.items())
    print(f"\nRegisters (ptxas -v of the device build) equal to run 11's for every pack count compiled now: {regs} of"
          f" {len(mine)} cells ({sum(len(v) for v in mine.values())} kernels).\n")
    print("Cells whose ratio to compile or whose own time moved by more than 1% against run 11, with each side's"
          " three rounds (us):\n")
    print("| cell | expression | run 11 | run 6 | run 7 | ours rounds run 11 / run 6 / run 7 |")
    print("|---|---|---|---|---|---|")
    b11 = before["run 11"]
    for k in sorted(b11):
        if not any(abs(r[k]["us"] / b11[k]["us"] - 1) > 0.01 or abs(r[k]["vs_compile"] / b11[k]["vs_compile"] - 1) > 0.01
                   for r in runs.values()):
            continue
        rounds = " / ".join("-".join(f"{x:.0f}" for x in d[k]["rounds_us"]) for d in (b11, *runs.values()))
        print(f"| {k[0]} {k[1]} | `{b11[k]['expr'][:40]}` | {b11[k]['vs_compile']:.3f} | "
              f"{runs['run 6'][k]['vs_compile']:.3f} | {runs['run 7'][k]['vs_compile']:.3f} | {rounds} |")
    print()


def examples(now: Path) -> None:
    print("## Elementwise examples at 2^28 (docs/benchmarks.md's table; before: docs/results/bench_<op>.txt)\n")
    print("| op | dtype | GB/s before (rerun) | GB/s now | time now/before | noise: rerun/before | "
          "baseline | ratio before (rerun) | ratio now | % of copy before / now |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for op, base in (("muladd", "addcmul"), ("gelu", "compile"), ("silu_mul", "compile")):
        old, rerun = table(RESULTS / f"bench_{op}.txt"), table(RESULTS / f"bench_{op}_rerun.txt")
        new = rows(now / f"bench_{op}.json")
        for dtype in DTYPES:
            o, r2, n = old[(dtype, "2^28")], rerun.get((dtype, "2^28")), new[(dtype, "2^28")]
            gbs = n["throughput"][op]
            ratio = gbs / n["throughput"][base]
            pct = 100 * gbs / n["roofline_throughput"]
            print(f"| {op} | {dtype} | {o[f'{op} GB/s']:.0f} ({r2[f'{op} GB/s']:.0f}) | {gbs:.0f} | "
                  f"{n['seconds'][op] * 1e6 / o[f'{op} us']:.4f} | {r2[f'{op} us'] / o[f'{op} us']:.4f} | {base} | "
                  f"{o[f'vs {base}']:.2f} ({r2[f'vs {base}']:.2f}) | {ratio:.3f} | {o['% of copy']:.0f} / {pct:.0f} |")
    g = rows(now / "bench_gelu.json")
    print("\nThe same run's gelu_tl at 2^28, ratio to compile: " + ", ".join(
        f"{d} {g[(d, '2^28')]['throughput']['gelu_tl'] / g[(d, '2^28')]['throughput']['compile']:.3f}" for d in DTYPES))
    print()


def generic(title: str, op: str, base: str, before: Path, now: Path, extra: tuple[str, ...] = (),
            dtypes: tuple[str, ...] | None = None) -> None:
    """now/before per cell of two harness JSONs: op's time, the baseline's time, op's ratio to the baseline."""
    old, new = rows(before), rows(now)
    print(f"## {title}\n")
    head = f"| dtype | shape | {op} us before | now | now/before | {base} now/before | vs {base} before | now |"
    for name in extra:
        head += f" {name} us now/before | {name} vs {base} before | now |"
    print(head)
    print("|" + "---|" * (head.count("|") - 1))
    for key, n in new.items():
        if key not in old or (dtypes and key[0] not in dtypes):
            continue
        o = old[key]
        line = (f"| {key[0]} | {key[1]} | {o['seconds'][op] * 1e6:.1f} | {n['seconds'][op] * 1e6:.1f} | "
                f"{n['seconds'][op] / o['seconds'][op]:.3f} | {n['seconds'][base] / o['seconds'][base]:.3f} | "
                f"{o['throughput'][op] / o['throughput'][base]:.3f} | {n['throughput'][op] / n['throughput'][base]:.3f} |")
        for name in extra:
            line += (f" {n['seconds'][name] / o['seconds'][name]:.3f} | "
                     f"{o['throughput'][name] / o['throughput'][base]:.3f} | {n['throughput'][name] / n['throughput'][base]:.3f} |")
        print(line)
    print()


def twin_since_stop23(impl: str, before: Path, now: Path) -> None:
    """A Triton rowwise twin's time in the CUDA op's benchmark now against its own stop 23 table."""
    old, new = rows(before), rows(now)
    print(f"## {impl} at 2^26 against stop 23's table (triton/stop23/{before.name}; now: a column of bench_{impl[:-3]})\n")
    print(f"| dtype | shape | {impl} us before | now | now/before | compile now/before | vs compile before | now |")
    print("|---|---|---|---|---|---|---|---|")
    for key, n in new.items():
        if key in old:
            o = old[key]
            print(f"| {key[0]} | {key[1]} | {o['seconds'][impl] * 1e6:.1f} | {n['seconds'][impl] * 1e6:.1f} | "
                  f"{n['seconds'][impl] / o['seconds'][impl]:.3f} | {n['seconds']['compile'] / o['seconds']['compile']:.3f} | "
                  f"{o['throughput'][impl] / o['throughput']['compile']:.3f} | {n['throughput'][impl] / n['throughput']['compile']:.3f} |")
    print()


def host(now: Path) -> None:
    def read(path: Path) -> dict[str, str]:
        found = {}
        for line in path.read_text().splitlines():
            m = re.match(r"host  (.*?)\s+(\d+\.\d+) us/call", line)
            if m:
                found[m.group(1)] = m.group(2)
        return found

    old, new = read(RESULTS / "triton" / "stop23" / "host_after.txt"), read(now / "host.txt")
    print("## Triton eager host time per call, 4096 elements (docs/device/triton_host.py; before: stop 23's host_after.txt)\n")
    print("| path | before us | now us |")
    print("|---|---|---|")
    for name in new:
        print(f"| {name} | {old.get(name, '-')} | {new[name]} |")
    print("\nFirst call / warm call, before: " + " ; ".join((RESULTS / "triton" / "stop23" / "first_call.txt").read_text().splitlines()))
    print("First call / warm call, now: " + " ; ".join((now / "first_call.txt").read_text().splitlines()) + "\n")


def main() -> None:
    now = Path(sys.argv[1]) if len(sys.argv) > 1 else RESULTS / "lean" / "h100_v9"
    sweep(now)
    examples(now)
    generic("Matmul vs cuBLAS (before: docs/results/matmul/stop22/bench_matmul.json; eager = torch.matmul)", "matmul",
            "eager", RESULTS / "matmul" / "stop22" / "bench_matmul.json", now / "bench_matmul.json")
    print("Noise then: the same kernels, stop 21 run 3 against stop 22 (a one-round harness then):\n")
    generic("Matmul noise: stop 22 / stop 21 run 3", "matmul", "eager", RESULTS / "matmul" / "stop21" / "run3" / "bench_matmul.json",
            RESULTS / "matmul" / "stop22" / "bench_matmul.json", dtypes=("float16", "bfloat16"))
    t23 = RESULTS / "triton" / "stop23"
    generic("Triton gelu_tl (before: triton/stop23/bench_gelu_tl.json)", "gelu_tl", "compile", t23 / "bench_gelu_tl.json",
            now / "bench_gelu_tl.json", extra=("gelu",))
    generic("Triton muladd_tl (before: triton/stop23/bench_muladd_tl.json)", "muladd_tl", "compile", t23 / "bench_muladd_tl.json",
            now / "bench_muladd_tl.json", extra=("muladd",))
    generic("Triton muladd_tl float32, stop23.sh final's table (before: triton/stop23/bench_muladd_tl_float32_final.json)",
            "muladd_tl", "compile", t23 / "bench_muladd_tl_float32_final.json", now / "bench_muladd_tl_float32.json",
            extra=("muladd",))
    generic("Triton muladd_tl float32 noise then: stop 23's final table / its bench table", "muladd_tl", "compile",
            t23 / "bench_muladd_tl.json", t23 / "bench_muladd_tl_float32_final.json")
    host(now)
    for op, impl in (("softmax", "softmax_tl"), ("layernorm", "layernorm_tl")):
        twin_since_stop23(impl, t23 / f"bench_{impl}.json", now / f"bench_{op}.json")
    r22 = RESULTS / "rowwise" / "stop22"
    for op, extra in (("rmsnorm", ()), ("softmax", ("softmax_tl",)), ("layernorm", ("layernorm_tl",)), ("log_softmax", ())):
        generic(f"Rowwise {op} at 2^26 (before: rowwise/stop22/bench_{op}_2e26.json)", op, "compile",
                r22 / f"bench_{op}_2e26.json", now / f"bench_{op}.json", extra=extra)


if __name__ == "__main__":
    main()
