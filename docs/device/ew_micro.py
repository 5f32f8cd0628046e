"""Times the kernel variants of ew_micro.cu against PyTorch's baselines in the same process.

    python3 ew_micro.py --lib ew_micro.so [--sizes 268435456] [--filter gelu] [--only NAME --reps N]

Each variant is checked against a float64 reference on fresh random inputs before it is timed.
Baselines (measured in the same run, twice, to show the run-to-run spread): torch copy_, addcmul,
torch.compile of a*b+c, a*b+c*d and x*sigmoid(1.702x).
--only NAME --reps N launches one variant N times and nothing else (for ncu).
"""
import argparse
import ctypes
import statistics
import sys

import torch
from triton.testing import do_bench

DT = {"float32": torch.float32, "float16": torch.float16, "bfloat16": torch.bfloat16, "float64": torch.float64}
N_IN = {"copy": 1, "gelu": 1, "erfgelu": 1, "muladd": 3, "quad4": 4}


def ref(op, x):
    if op == "copy":
        return x[0]
    if op == "gelu":
        return x[0] * torch.sigmoid(1.702 * x[0])
    if op == "erfgelu":
        return 0.5 * x[0] * (1 + torch.erf(x[0] * 0.7071067811865476))
    if op == "muladd":
        return x[0] * x[1] + x[2]
    return x[0] * x[1] + x[2] * x[3]


def bench(fn):
    return do_bench(fn, warmup=25, rep=100, return_mode="median") * 1e-3


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--lib", default="ew_micro.so")
    ap.add_argument("--sizes", default=str(2**28))
    ap.add_argument("--filter", default="")
    ap.add_argument("--only", default="")
    ap.add_argument("--reps", type=int, default=3)
    args = ap.parse_args()
    lib = ctypes.CDLL(args.lib)
    lib.ew_name.restype = ctypes.c_char_p
    lib.ew_launch.argtypes = [ctypes.c_int] + [ctypes.c_void_p] * 5 + [ctypes.c_int64, ctypes.c_void_p]
    names = [lib.ew_name(i).decode() for i in range(lib.ew_count())]

    def launcher(i, xs, out):
        ptrs = [t.data_ptr() for t in xs] + [0] * (4 - len(xs))
        n = out.numel()
        stream = torch.cuda.current_stream().cuda_stream

        def go():
            rc = lib.ew_launch(i, *ptrs, out.data_ptr(), n, stream)
            if rc >= 1000:
                raise RuntimeError(f"launch failed: cuda error {rc // 1000}")
            return rc  # blocks per SM

        return go

    if args.only:
        i = names.index(args.only)
        op, dname = args.only.split()[:2]
        n = int(args.sizes.split(",")[0])
        xs = [torch.randn(n, device="cuda", dtype=DT[dname]) for _ in range(N_IN[op])]
        out = torch.empty_like(xs[0])
        go = launcher(i, xs, out)
        for _ in range(args.reps):
            go()
        torch.cuda.synchronize()
        return

    gen = torch.Generator(device="cuda")
    gen.manual_seed(0)
    compiled = {
        "muladd": torch.compile(lambda a, b, c: a * b + c),
        "quad4": torch.compile(lambda a, b, c, d: a * b + c * d),
        "gelu": torch.compile(lambda x: x * torch.sigmoid(1.702 * x)),
        "erfgelu": torch.compile(lambda x: 0.5 * x * (1 + torch.erf(x * 0.7071067811865476))),
    }
    print(f"{torch.cuda.get_device_name()}; torch {torch.__version__}", flush=True)
    for size in [int(s) for s in args.sizes.split(",")]:
        for dname, dtype in DT.items():
            rows = [(i, nm) for i, nm in enumerate(names) if nm.split()[1] == dname and args.filter in nm]
            if not rows:
                continue
            xs = [torch.randn(size, device="cuda", dtype=dtype, generator=gen) for _ in range(4)]
            out = torch.empty_like(xs[0])
            itemsize = xs[0].element_size()

            def gbs(t, k):
                return (k + 1) * size * itemsize / t / 1e9

            base = {}
            for rnd in range(2):
                for key, fn, k in [
                    ("copy", lambda: out.copy_(xs[0]), 1),
                    ("addcmul", lambda: torch.addcmul(xs[2], xs[0], xs[1]), 3),
                    ("c:muladd", lambda: compiled["muladd"](*xs[:3]), 3),
                    ("c:quad4", lambda: compiled["quad4"](*xs), 4),
                    ("c:gelu", lambda: compiled["gelu"](xs[0]), 1),
                    ("c:erfgelu", lambda: compiled["erfgelu"](xs[0]), 1),
                    ("eager:gelu", lambda: ref("gelu", xs[:1]), 1),
                ]:
                    base.setdefault(key, []).append(gbs(bench(fn), k))
            print(f"\n== {dname} n=2^{size.bit_length() - 1}  baselines GB/s (two rounds): "
                  + ", ".join(f"{k} {v[0]:.0f}/{v[1]:.0f}" for k, v in base.items()), flush=True)
            vs = {"copy": "copy", "muladd": "addcmul", "quad4": "c:quad4", "gelu": "c:gelu", "erfgelu": "c:erfgelu"}
            for i, nm in rows:
                op = nm.split()[0]
                k = N_IN[op]
                # correctness on fresh inputs, poisoned output
                fresh = [torch.randn(size, device="cuda", dtype=dtype, generator=gen) for _ in range(k)]
                o = torch.full_like(fresh[0], float("nan"))
                launcher(i, fresh, o)()
                want = ref(op, [t.double() for t in fresh])
                err = ((o.double() - want).norm() / want.norm()).item()
                tol = {"float64": 1e-12, "float32": 1e-6}.get(dname, 1e-2)
                status = "ok" if err <= tol and not o.isnan().any() else f"WRONG err={err:.2e}"
                del fresh, o, want
                go = launcher(i, xs[:k], out)
                per_sm = go()
                t = bench(go)
                g = gbs(t, k)
                b = statistics.mean(base[vs[op]])
                print(f"{nm:34s} {t * 1e6:9.1f} us {g:7.0f} GB/s  {g / b:5.3f}x {vs[op]:8s} "
                      f"{g / statistics.mean(base['copy']):5.3f}x copy  blocks/SM {per_sm}  relerr {err:.1e} {status}",
                      flush=True)
            del xs, out
            torch.cuda.empty_cache()


if __name__ == "__main__":
    sys.exit(main())
