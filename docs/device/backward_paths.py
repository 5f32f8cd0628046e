"""Each kernel the Triton rowwise backward could take, forced in turn and timed, with the compiled kernels' registers
and spills as this GPU's Triton reports them (stop 65: at rows of 16384 the launch kept r03_tl's kernel of one
program a row, which ran at 3-8% of a copy, where the dev machine's Triton predicted the long kernel).

    python docs/device/backward_paths.py PACKAGE_DIR --ops r03_tl,r06_tl [--dtypes bfloat16,float32]
                                         [--cols 4096,16384] [--size 67108864] [--compile-only --part i/n]

Paths, each by patching the op module's globals for its calls (rows up to the op's _MAX_BACKWARD_BLOCK; longer
rows take the long kernel whatever the patch):
  auto       what the launch takes by itself; the resident() answers it read are printed (kernel, warps,
             programs held, bytes spilled a thread)
  rows@W     the rows kernel (as many programs as the GPU holds at W warps, weights summed on chip), for ops
             with weights: backward_fit answers W for it (backward_pipeline then stages it where it would)
  staged@W   the rows kernel's staged build at W warps (its next row in shared memory), for ops with weights:
             backward_fit answers None for the rows kernel, backward_staged W
  one@W      the kernel of one program a row at W warps: backward_fit answers None for the rows kernel, W for it,
             and backward_staged None
  long       the long kernel's passes (_MAX_BACKWARD_BLOCK lowered below the row)
  long:BxW   (--long) the long kernel at chunks of B elements and W warps, the module's cache hints; long:BxW:h
             with the hints (evict_last, then evict_first) and long:BxW:n without, whatever the dtype; at every
             row length, the rows past _MAX_BACKWARD_BLOCK included (their launch's _long_backward patched)
W: the launch's warps for the row and twice them (at most 32).
--lift raises the op's _MAX_BACKWARD_BLOCK to the row for every path but long (auto included): what the launch
would take, and what each register kernel costs, if the compiled kernel's counts alone bounded the rows in
registers (design.md lesson 45) rather than the count of row-sized values.
Each timed with triton.testing.do_bench (median, <op>_backward alone, every gradient asked for) against a copy of
the backward's bytes (--graphs: replayed from a CUDA graph, the host's time left out). --compile-only calls each
path once (fills Triton's cache on disk; n processes side by side with --part). It asserts nothing.
"""

from __future__ import annotations

import importlib
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from backward_bench import import_package
from paths_common import cells, compile_paths, op_arguments, time_paths
from paths_common import parser as make_parser


def main(argv: list[str] | None = None) -> None:
    parser = make_parser(__doc__, "bfloat16,float32", "4096,16384")
    parser.add_argument("--lift", action="store_true", help="_MAX_BACKWARD_BLOCK raised to the row (but for long)")
    parser.add_argument("--long", default="", help="long-kernel shapes to time, e.g. 4096x8,1024x8:h,1024x8:n")
    args = parser.parse_args(argv)

    import torch
    from triton.testing import do_bench

    kinds, package, namespace = import_package(args.package)
    shared = importlib.import_module(f"{package.__name__}._triton_rowwise")
    seen: list[str] = []
    real_resident = shared.resident

    def recording(kernel, kargs, options, device):
        held, spills = real_resident(kernel, kargs, options, device)
        seen.append(f"{kernel.__name__.split('_backward_')[-1]}@{options['num_warps']}w: {held} held, {spills} B")
        return held, spills

    for name, dtype_name, cols in cells(args):
        module = importlib.import_module(f"{package.__name__}.ops.{name}")
        backward = getattr(getattr(torch.ops, namespace), f"{name}_backward").default
        n_weights = kinds.get(name, ("rowwise", 0))[1]
        n_args = module.reference.__code__.co_argcount
        dtype = getattr(torch, dtype_name)
        xs, n_inputs = op_arguments(torch, module, n_weights, dtype, args.size, cols)
        g = torch.empty((args.size // cols, cols), dtype=dtype, device="cuda").normal_(
            generator=torch.Generator("cuda").manual_seed(args.size + 1))
        base_warps = module._num_warps(1 << (cols - 1).bit_length())
        originals = {k: getattr(module, k) for k in ("_MAX_BACKWARD_BLOCK", "_long_backward") if hasattr(module, k)}
        shared_originals = {k: getattr(shared, k) for k in ("backward_fit", "backward_staged")}

        def forced(kernel, kargs, options, device, prefetches=False, rows_warps=None, one_warps=None):
            if kernel.__name__.endswith("_rows_kernel"):
                if rows_warps is None:
                    return None
                return rows_warps, real_resident(kernel, kargs, {**options, "num_warps": rows_warps}, device)[0]
            return one_warps, 1

        def staged_at(kernel, kargs, options, device, rows, warps):
            held = shared._staged(kernel, kargs, {**options, "num_warps": warps}, device)[0]
            return (warps, held) if held else None

        def run(path: str, xs=xs, g=g, backward=backward, n=n_args, module=module, originals=originals, cols=cols,
                shared_originals=shared_originals):
            patch = dict(originals)
            shared_patch = dict(shared_originals)
            getattr(shared, "_ANSWERS", {}).clear()  # the launch's kept answers: each path asks its own rules
            if path == "auto":
                shared.resident = recording
            elif path.startswith("rows@"):
                shared_patch["backward_fit"] = lambda *a, w=int(path[5:]), **kw: forced(*a, **kw, rows_warps=w)
            elif path.startswith("staged@"):
                shared_patch["backward_fit"] = lambda kernel, *a, real=shared_originals["backward_fit"], **kw: (
                    None if kernel.__name__.endswith("_rows_kernel") else real(kernel, *a, **kw))
                shared_patch["backward_staged"] = lambda *a, w=int(path[7:]): staged_at(*a, warps=w)
            elif path.startswith("one@"):
                shared_patch["backward_fit"] = lambda *a, w=int(path[4:]), **kw: forced(*a, **kw, one_warps=w)
                shared_patch["backward_staged"] = lambda *a: None
            if args.lift and path != "long":
                patch["_MAX_BACKWARD_BLOCK"] = max(cols, originals["_MAX_BACKWARD_BLOCK"])
            if path == "long" or path.startswith("long:"):
                patch["_MAX_BACKWARD_BLOCK"] = 0
            if path.startswith("long:"):
                shape, _, hint = path[5:].partition(":")
                block, warps = (int(v) for v in shape.split("x"))

                def shaped(of, block=block, warps=warps, hint=hint, real=originals["_long_backward"]):
                    launch = {**real(of), "BLOCK": block, "num_warps": warps}
                    if hint:
                        on = hint == "h"
                        launch.update(KEEP="evict_last" if on else "", STREAM="evict_first" if on else "")
                    return launch

                patch["_long_backward"] = shaped
            for key, value in patch.items():
                setattr(module, key, value)
            for key, value in shared_patch.items():
                setattr(shared, key, value)
            try:
                return backward(g, *xs, [True] * n)
            finally:
                shared.resident = real_resident
                for key, value in originals.items():
                    setattr(module, key, value)
                for key, value in shared_originals.items():
                    setattr(shared, key, value)

        wide = min(32, 2 * base_warps)
        paths = ["auto"]
        if cols <= module._MAX_BACKWARD_BLOCK or args.lift:
            if n_weights:
                paths += [f"rows@{base_warps}", f"rows@{wide}", f"staged@{base_warps}", f"staged@{wide}"]
            paths += [f"one@{base_warps}", f"one@{wide}", "long"]
        paths += [f"long:{shape}" for shape in args.long.split(",") if shape]
        if args.compile_only:
            compile_paths(torch, run, paths, f"{name} {dtype_name} {cols}")
            continue
        seen.clear()
        run("auto")
        auto_seen = "; ".join(dict.fromkeys(seen))
        figures = time_paths(torch, do_bench, run, paths, (2 * n_inputs + 1) * args.size * dtype.itemsize, dtype, args.graphs)
        print(f"{name:8s} {dtype_name:9s} {cols:6d} | {figures} | counts: {auto_seen}", flush=True)
        del xs, g


if __name__ == "__main__":
    main()
