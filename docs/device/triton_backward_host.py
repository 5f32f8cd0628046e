"""Issue 29: where the host time of forward+backward of a generated Triton op goes.

    python3 docs/device/triton_backward_host.py PACKAGE_DIR [--ops gelu_tl,layernorm_tl]

PACKAGE_DIR is a package of Triton ops with generated backwards (no build needed). At 4096 elements
(rows of 64 for a rowwise op) the GPU time is negligible, so host microseconds per call are what a
training loop of such calls costs (triton_host.per_call: 2000 calls after 200 warm-up calls, one
synchronize at the end).
Timed per op: out = op(*x); out.backward(g) through the public function; the registered op's
backward alone; the backward's launcher with the raw kernels; the forward alone with grad enabled;
then a cProfile of forward+backward (the 25 functions with the most own time).
"""

from __future__ import annotations

import argparse
import cProfile
import importlib
import pstats
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).parent))
from triton_host import per_call  # the same per-call host timing as issue 12's


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("package")
    parser.add_argument("--ops", default="gelu_tl,layernorm_tl")
    parser.add_argument("--weights", default="0,2", help="weights of each op, in order")
    args = parser.parse_args()
    sys.path.insert(0, args.package)
    with open(f"{args.package}/.copier-answers.yml") as answers_file:
        answers = answers_file.read().splitlines()
    name = next(line.split(":", 1)[1].strip() for line in answers if line.startswith("package:"))
    package = importlib.import_module(name)
    for op_name, n_weights in zip(args.ops.split(","), map(int, args.weights.split(",")), strict=True):
        profile_op(name, package, op_name, n_weights)


def profile_op(name: str, package, op_name: str, n_weights: int) -> None:
    module = importlib.import_module(f"{name}.ops.{op_name}")
    call = getattr(package, op_name)
    ns, backward_name = module._BACKWARD.split("::")
    backward = getattr(getattr(torch.ops, ns), backward_name).default
    n_args = module.reference.__code__.co_argcount
    shape = (64, 64)
    xs = [torch.randn(shape, device="cuda") for _ in range(n_args - n_weights)]
    xs += [torch.rand(shape[-1], device="cuda") + 0.5 for _ in range(n_weights)]
    leaves = [x.clone().requires_grad_() for x in xs]
    g = torch.randn(shape, device="cuda")

    def fwd_bwd():
        call(*leaves).backward(g)

    rows = {
        "fwd+bwd (public function, autograd)": per_call(fwd_bwd),
        "fwd only, grad enabled": per_call(lambda: call(*leaves)),
        "fwd only, no grad": per_call(lambda: call(*xs)),
        "registered backward op alone": per_call(lambda: backward(g, *xs, [True] * n_args)),
        "eager reference fwd+bwd": per_call(lambda: module.reference(*leaves).backward(g)),
    }
    for label, us in rows.items():
        print(f"{op_name:14s} {label:40s} {us:8.1f} us", flush=True)
    profile = cProfile.Profile()
    profile.enable()
    for _ in range(300):
        fwd_bwd()
    profile.disable()
    torch.cuda.synchronize()
    print(f"--- cProfile of 300 forward+backward calls of {op_name} (own time)")
    pstats.Stats(profile).sort_stats("tottime").print_stats(25)


if __name__ == "__main__":
    main()
