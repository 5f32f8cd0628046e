"""Issue 12: the Triton LayerNorm at rows of 16384 in float16/bfloat16 (0.77x of torch.compile, 76% of
copy in stop 22). Self-contained: no build, run on the GPU machine as

    python3 docs/device/triton_ln_variants.py

Variants of the kernel kernelgen's rowwise Triton template generates for
(x - mean(x)) * rsqrt(mean((x - mean(x)) ** 2) + 1e-5) * w + b, timed against torch.compile of the
same formula and a device copy, at 2^26 elements, rows of 1024 / 4096 / 16384:
  early  the template as it is: the weights loaded with the row, before the reductions
  late   the weights loaded after the reductions, where the output uses them (as the CUDA template does)
  late32 late, with 32 warps at BLOCK 16384 (16 elements per thread)
ptxas on the dev machine (triton 3.8, sm_90a) at BLOCK 16384, 16 warps: early 128 registers (float32) /
97 (bfloat16), late 87 / 63; with 63 registers two 512-thread blocks fit on an SM, as the CUDA kernel
runs. Prints one line per dtype, rows and variant: us, % of copy and the ratio to compile.
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

# The template's kernel as it is (the same script directory: docs/device/ln_ncu.py).
from ln_ncu import ln_kernel as ln_early
from triton.testing import do_bench


@triton.jit
def ln_late(x_ptr, w_ptr, b_ptr, out_ptr, cols, BLOCK: tl.constexpr, ACC: tl.constexpr):
    base = tl.program_id(0).to(tl.int64) * cols
    offsets = tl.arange(0, BLOCK)
    mask = offsets < cols
    x = tl.load(x_ptr + base + offsets, mask=mask, other=0.0).to(ACC)
    r0 = tl.sum(tl.where(mask, x, 0.0), axis=0) / cols
    r1 = tl.sum(tl.where(mask, (x - r0) * (x - r0), 0.0), axis=0) / cols
    w = tl.load(w_ptr + offsets, mask=mask, other=0.0).to(ACC)
    b = tl.load(b_ptr + offsets, mask=mask, other=0.0).to(ACC)
    result = (x - r0) * tl.rsqrt(r1 + tl.full((), 1e-05, ACC)) * w + b
    tl.store(out_ptr + base + offsets, result.to(out_ptr.dtype.element_ty), mask=mask)


def reference(x, w, b):
    mean = x.mean(-1, keepdim=True)
    var = ((x - mean) ** 2).mean(-1, keepdim=True)
    return (x - mean) * torch.rsqrt(var + 1e-5) * w + b


def main() -> None:
    total = 1 << 26
    variants = {"early": (ln_early, None), "late": (ln_late, None), "late32": (ln_late, 32)}
    for dtype in (torch.float32, torch.float16, torch.bfloat16):
        for cols in (1024, 4096, 16384):
            rows = total // cols
            x = torch.randn(rows, cols, device="cuda", dtype=dtype)
            w = torch.randn(cols, device="cuda", dtype=dtype)
            b = torch.randn(cols, device="cuda", dtype=dtype)
            out = torch.empty_like(x)
            expected = reference(x.float(), w.float(), b.float())
            torch._dynamo.reset()
            compiled = torch.compile(reference)
            t_compile = do_bench(lambda: compiled(x, w, b), return_mode="median")  # noqa: B023
            t_copy = do_bench(lambda: out.copy_(x), return_mode="median")  # noqa: B023
            for name, (kernel, warps) in variants.items():
                block = triton.next_power_of_2(cols)
                num_warps = warps or max(4, min(16, block // 512))

                def run(kernel=kernel, num_warps=num_warps, block=block):
                    return kernel[(rows,)](x, w, b, out, cols, BLOCK=block, ACC=tl.float32, num_warps=num_warps)  # noqa: B023

                compiled_kernel = run()
                regs = f"{getattr(compiled_kernel, 'n_regs', '?')} regs {getattr(compiled_kernel, 'n_spills', '?')} spills"
                err = (out.float() - expected).abs().max().item()
                t = do_bench(run, return_mode="median")
                print(f"{str(dtype)[6:]:9s} {rows}x{cols:<6d} {name:7s} warps={num_warps:2d} {t * 1e3:7.1f} us"
                      f"  {100 * t_copy / t:5.1f}% of copy  {t_compile / t:5.2f}x compile  max err {err:.2e}  {regs}", flush=True)


if __name__ == "__main__":
    main()
