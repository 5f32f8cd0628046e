"""Peak memory of one rowwise suite's exact gradients and their error bounds (RowwiseSuite.exact_gradients),
computed in pieces of GRAD_CHUNK elements of rows (template version 26) or whole (--whole), and whether the two
agree. Runs on the CPU of the dev machine against a CPU-only build of the package:

    python docs/device/rowwise_sweep.py generate /tmp/m14 --manifest .device/s50/rowwise_sweep.json --only r14 \\
        --backends cuda --backward fused
    (cd /tmp/m14/rsweep-ops && KERNELGEN_CPU_ONLY=1 python setup.py build_ext --inplace)
    python docs/device/grad_bound_memory.py /tmp/m14/rsweep-ops r14 --shape 700,16400 --dtype bfloat16
    python docs/device/grad_bound_memory.py /tmp/m14/rsweep-ops r14 --shape 700,16400 --dtype bfloat16 --whole

Each run is one process (the peak resident size is per process). --compare runs both in one process and prints
the largest relative differences of the gradients and the bounds instead."""
import argparse
import importlib
import resource
import sys

import torch


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("package")
    parser.add_argument("op")
    parser.add_argument("--shape", default="700,16400")
    parser.add_argument("--dtype", default="bfloat16")
    parser.add_argument("--whole", action="store_true", help="one piece: the suite before template version 26")
    parser.add_argument("--compare", action="store_true", help="pieces against whole, in one process")
    a = parser.parse_args()
    sys.path[:0] = [a.package, a.package + "/tests"]
    tests = importlib.import_module(f"test_{a.op}")
    rowwise = next(m for name, m in sys.modules.items() if name.endswith(".testing.rowwise"))
    suite = next(c for c in vars(tests).values() if isinstance(c, type) and issubclass(c, rowwise.RowwiseSuite)
                 and c is not rowwise.RowwiseSuite)()
    shape = tuple(int(n) for n in a.shape.split(","))
    args, grad = suite.backward_args(shape, getattr(torch, a.dtype), "cpu", seed=41)
    if a.compare:
        pieces = suite.exact_gradients(grad, args)
        rowwise.GRAD_CHUNK = 2**62
        whole = suite.exact_gradients(grad, args)
        for (w1, e1), (w2, e2) in zip(pieces, whole, strict=True):
            print(f"{tuple(w1.shape)}: gradients {((w1 - w2).abs() / w2.abs().clamp(min=1e-300)).max().item():.3g}, "
                  f"bounds {((e1 - e2).abs() / e2.abs().clamp(min=1e-300)).max().item():.3g} (largest relative difference)")
        return
    if a.whole:
        rowwise.GRAD_CHUNK = 2**62
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    suite.exact_gradients(grad, args)
    after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    print(f"{a.op} {a.dtype} {shape} {'whole' if a.whole else f'pieces of {rowwise.GRAD_CHUNK} elements'}: "
          f"peak resident {after / 2**20:.2f} GiB (before the call {before / 2**20:.2f} GiB)")


if __name__ == "__main__":
    main()
