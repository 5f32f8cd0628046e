"""Triton rows too long for registers (issue 28): does a persistent grid, sized so that the rows in flight
fit the L2 cache, let the passes after the first read the row from L2 instead of HBM?

    python docs/device/triton_long_rows.py [--cols 65536,262144] [--dtypes bfloat16,float32] [--size 67108864]
                                           [--rounds 2] [--json FILE]

The generated Triton rowwise ops take rows longer than 16384 in a multi-pass kernel (_<op>_long_kernel):
one program per row, which loops over the row once per reduction and once for the output. With one
program per row, every row is in flight at once (an SM holds several programs), so the rows read by the
first pass (2**26 elements: 128-256 MiB) are long gone from the 50 MB L2 when the second pass reads them
again. This script times two multi-pass kernels written here the same way (softmax: two reductions, the
second nested in the first; RMSNorm with a weight: one) in these forms:
  * `per_row`: one program per row, as generated (BLOCK 4096, 8 warps);
  * `persist<k>`: k programs an SM, each looping over rows pid, pid + grid, ...;
  * `l2fit`: a persistent grid of as many programs as keep L2_BUDGET bytes of rows in flight (at least
    one an SM, at most one per row);
  * `...+ev`: the first pass loads with evict_last and the output is stored with evict_first.
against torch.compile of the same formula and a device copy of the same bytes, interleaved rounds, each
side keeping its best median (triton.testing.do_bench). Every variant's output is checked against
PyTorch's.
"""

from __future__ import annotations

import argparse
import json


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cols", default="65536,262144")
    parser.add_argument("--dtypes", default="bfloat16,float32")
    parser.add_argument("--size", type=int, default=2**26)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--json", default="")
    args = parser.parse_args(argv)

    import torch
    import triton
    import triton.language as tl
    from triton.testing import do_bench

    @triton.jit
    def softmax_long(x_ptr, out_ptr, rows, cols, BLOCK: tl.constexpr, PERSIST: tl.constexpr,
                     FIRST_LOAD: tl.constexpr, STORE: tl.constexpr):
        if PERSIST:
            step = tl.num_programs(0)
        else:
            step = rows
        for row in range(tl.program_id(0), rows, step):
            base = tl.cast(row, tl.int64) * cols
            acc = tl.full((BLOCK,), float("-inf"), tl.float32)
            for start in range(0, cols, BLOCK):
                offsets = start + tl.arange(0, BLOCK)
                mask = offsets < cols
                x = tl.load(x_ptr + base + offsets, mask=mask, other=0.0, eviction_policy=FIRST_LOAD).to(tl.float32)
                acc = tl.maximum(acc, tl.where(mask, x, float("-inf")))
            r0 = tl.max(acc, 0)
            acc = tl.full((BLOCK,), 0.0, tl.float32)
            for start in range(0, cols, BLOCK):
                offsets = start + tl.arange(0, BLOCK)
                mask = offsets < cols
                x = tl.load(x_ptr + base + offsets, mask=mask, other=0.0, eviction_policy=FIRST_LOAD).to(tl.float32)
                acc += tl.where(mask, tl.exp(x - r0), 0.0)
            r1 = tl.sum(acc, 0)
            for start in range(0, cols, BLOCK):
                offsets = start + tl.arange(0, BLOCK)
                mask = offsets < cols
                x = tl.load(x_ptr + base + offsets, mask=mask, other=0.0).to(tl.float32)
                y = tl.exp(x - r0) / r1
                tl.store(out_ptr + base + offsets, y.to(out_ptr.dtype.element_ty), mask=mask, eviction_policy=STORE)

    @triton.jit
    def rmsnorm_long(x_ptr, w_ptr, out_ptr, rows, cols, BLOCK: tl.constexpr, PERSIST: tl.constexpr,
                     FIRST_LOAD: tl.constexpr, STORE: tl.constexpr):
        if PERSIST:
            step = tl.num_programs(0)
        else:
            step = rows
        for row in range(tl.program_id(0), rows, step):
            base = tl.cast(row, tl.int64) * cols
            acc = tl.full((BLOCK,), 0.0, tl.float32)
            for start in range(0, cols, BLOCK):
                offsets = start + tl.arange(0, BLOCK)
                mask = offsets < cols
                x = tl.load(x_ptr + base + offsets, mask=mask, other=0.0, eviction_policy=FIRST_LOAD).to(tl.float32)
                acc += x * x
            r0 = tl.sum(acc, 0) / cols
            for start in range(0, cols, BLOCK):
                offsets = start + tl.arange(0, BLOCK)
                mask = offsets < cols
                x = tl.load(x_ptr + base + offsets, mask=mask, other=0.0).to(tl.float32)
                w = tl.load(w_ptr + offsets, mask=mask, other=0.0).to(tl.float32)
                y = x * tl.rsqrt(r0 + 1e-6) * w
                tl.store(out_ptr + base + offsets, y.to(out_ptr.dtype.element_ty), mask=mask, eviction_policy=STORE)

    def softmax_ref(x):
        return torch.softmax(x.float(), -1).to(x.dtype)

    def rmsnorm_ref(x, w):
        xf = x.float()
        return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + 1e-6) * w.float()).to(x.dtype)

    sms = torch.cuda.get_device_properties(0).multi_processor_count
    l2 = torch.cuda.get_device_properties(0).L2_cache_size
    print(f"{torch.cuda.get_device_name()}: {sms} SMs, L2 {l2 / 2**20:.0f} MiB; triton {triton.__version__}, torch {torch.__version__}")
    results = []
    for dtype_name in args.dtypes.split(","):
        dtype = getattr(torch, dtype_name)
        for cols in [int(c) for c in args.cols.split(",")]:
            rows = args.size // cols
            gen = torch.Generator("cuda").manual_seed(cols)
            x = torch.randn((rows, cols), generator=gen, device="cuda").to(dtype)
            w = (torch.rand((cols,), generator=gen, device="cuda") + 0.5).to(dtype)
            row_bytes = cols * x.element_size()
            for op in ("softmax", "rmsnorm"):
                ref = softmax_ref if op == "softmax" else rmsnorm_ref
                operands = (x,) if op == "softmax" else (x, w)
                kernel = softmax_long if op == "softmax" else rmsnorm_long
                want = ref(*operands)
                out = torch.empty_like(x)
                nbytes = 2 * x.numel() * x.element_size()
                src = torch.empty(nbytes // 2, dtype=torch.uint8, device="cuda")
                dst = torch.empty_like(src)
                variants: dict[str, object] = {}

                def launch(grid, persist, evict, block=4096, warps=8):
                    def run():
                        kernel[(grid,)](*operands, out, rows, cols, BLOCK=block, PERSIST=persist,
                               FIRST_LOAD="evict_last" if evict else "", STORE="evict_first" if evict else "", num_warps=warps)
                    return run

                variants["per_row"] = launch(rows, False, False)
                variants["per_row+ev"] = launch(rows, False, True)
                for k in (1, 2, 4):
                    variants[f"persist{k}"] = launch(min(rows, k * sms), True, False)
                    variants[f"persist{k}+ev"] = launch(min(rows, k * sms), True, True)
                fit = max(sms, min(rows, (l2 // 2) // row_bytes))
                variants["l2fit"] = launch(fit, True, False)
                variants["l2fit+ev"] = launch(fit, True, True)
                variants["l2fit_b8k_w16"] = launch(fit, True, False, 8192, 16)
                compiled = torch.compile(ref)
                variants["compile"] = lambda: compiled(*operands)
                variants["copy"] = lambda: dst.copy_(src)
                for name, fn in variants.items():
                    if name in ("compile", "copy"):
                        continue
                    out.zero_()
                    fn()
                    torch.cuda.synchronize()
                    err = (out.float() - want.float()).abs().max().item()
                    if not err <= (2e-2 if x.element_size() == 2 else 1e-4):
                        print(f"  {op} {dtype_name} {cols} {name}: max error {err:.3g}  WRONG")
                best: dict[str, float] = {}
                for _ in range(args.rounds):
                    for name, fn in variants.items():
                        ms = do_bench(fn, warmup=25, rep=100, return_mode="median")
                        best[name] = min(best.get(name, float("inf")), ms)
                line = f"{op:8s} {dtype_name:9s} {cols:>7d} rows {rows:>5d} l2fit grid {fit:>4d} | copy {best['copy'] * 1e3:7.1f} us, compile {best['compile'] * 1e3:7.1f} us ({100 * best['copy'] / best['compile']:3.0f}% of copy)"
                print(line)
                for name in variants:
                    if name in ("compile", "copy"):
                        continue
                    print(f"    {name:14s} {best[name] * 1e3:8.1f} us  {best['compile'] / best[name]:5.2f}x compile  {100 * best['copy'] / best[name]:4.0f}% of copy")
                results.append({"op": op, "dtype": dtype_name, "cols": cols, "rows": rows, "l2fit": fit,
                                "us": {k: v * 1e3 for k, v in best.items()}})
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1)


if __name__ == "__main__":
    main()
