"""Issue 10: why does Triton's LayerNorm reach 99% of copy at rows of 16384 float32 and our CUDA kernel
76%? One launch of each on the same input, for ncu to compare (docs/device/ln_ncu.sh):

    python3 docs/device/ln_ncu.py PACKAGE_DIR   # a generated LayerNorm op named lnexp (rowwise_variants.py)

The Triton kernel is the one kernelgen's rowwise Triton template generates for this expression
(BLOCK 16384, 16 warps).
"""

import importlib
import sys

import torch
import triton
import triton.language as tl


@triton.jit
def ln_kernel(x_ptr, w_ptr, b_ptr, out_ptr, cols, BLOCK: tl.constexpr, ACC: tl.constexpr):
    base = tl.program_id(0).to(tl.int64) * cols
    offsets = tl.arange(0, BLOCK)
    mask = offsets < cols
    x = tl.load(x_ptr + base + offsets, mask=mask, other=0.0).to(ACC)
    w = tl.load(w_ptr + offsets, mask=mask, other=0.0).to(ACC)
    b = tl.load(b_ptr + offsets, mask=mask, other=0.0).to(ACC)
    r0 = tl.sum(tl.where(mask, x, 0.0), axis=0) / cols
    r1 = tl.sum(tl.where(mask, (x - r0) * (x - r0), 0.0), axis=0) / cols
    result = (x - r0) * tl.rsqrt(r1 + tl.full((), 1e-05, ACC)) * w + b
    tl.store(out_ptr + base + offsets, result.to(out_ptr.dtype.element_ty), mask=mask)


def main(package_dir: str) -> None:
    sys.path.insert(0, package_dir)
    lnexp = importlib.import_module("lnexp")
    rows, cols = 4096, 16384
    for dtype in (torch.float32, torch.bfloat16):
        x = torch.randn(rows, cols, device="cuda", dtype=dtype)
        w = torch.randn(cols, device="cuda", dtype=dtype)
        b = torch.randn(cols, device="cuda", dtype=dtype)
        out = torch.empty_like(x)
        for _ in range(2):
            ours = lnexp.lnexp(x, w, b)
            ln_kernel[(rows,)](x, w, b, out, cols, BLOCK=16384, ACC=tl.float32, num_warps=16)
        torch.cuda.synchronize()
        print(dtype, "max difference", (ours.float() - out.float()).abs().max().item())
    compiled = ln_kernel.cache[0] if hasattr(ln_kernel, "cache") else None
    print("triton kernels compiled:", len(compiled) if compiled else "?")


if __name__ == "__main__":
    main(sys.argv[1])
