"""Kernel variants of the rowwise register kernel, for one device run (issue 10's remaining cells).

It edits the kernel text of template versions 5-10 (each op's own <op>_kernel.cu): run it from a
checkout of that era. From version 11 on the kernels live in the package's csrc/kernelgen/rowwise.cuh.

    python docs/device/rowwise_variants.py .device/rwexp     # dev machine (needs copier): generates
    bash docs/device/rowwise_variants.sh                      # GPU machine: builds and benches them

Generates a LayerNorm op (two weights) and a softmax op with the current templates, then copies the
LayerNorm package once per variant and edits its kernel file:
  base        the template as it is
  pre         the output's weight packs loaded with the inputs, before the reductions (in flight
              during them), instead of in the output loop after the last barrier
  pre_lb1     pre, and __launch_bounds__(512, 1) for the 32-elements-per-thread kernel (128 registers)
  t1024_pre   pre, with up to 1024 threads of 16 elements per row (no 32-per-thread kernel)
  na          the register kernel's input loads with ld.global.L1::no_allocate: the rows stream past
              L1, so that the weights (re-read for every row) stay in it
  cs          the same with __ldcs (ld.global.cs, evict-first in L1 and L2)
  na_wl       na, and the weights with ld.global.nc.L1::evict_last
  mp          rows longer than 8192 take the multi-pass kernel (passes after the first read the row
              from L2) instead of 32 registers per thread
  h32         (the template since stop 20) float16/bfloat16 rows take 32 elements per thread at every length (64 bytes in flight
              per thread, as float32 has with 16), so 4096 is 128 threads, not 256
  lb3         the 16-per-thread kernel capped at 42 registers (3 blocks of 512, 6 of 256 per SM)
  smem        (stop 20, not yet run) rows of 8193-16384 in shared memory, copied with cp.async by 256
              threads (no registers held by loads in flight): 3 float32 rows of 16384 per SM instead
              of 2; the reductions and the output read the row from shared memory
  tree        (stop 22) row_reduce's cross-warp step as one shared-memory load per lane and a butterfly
              of shuffles (Triton's tl.sum), not 16 dependent shared-memory loads per thread
  tree_lb1    tree, and __launch_bounds__(512, 1) for the 32-per-thread kernel
  tree_pre_lb1  tree + pre_lb1: Triton's own LayerNorm shape at 16384 (128 registers, one 512-thread
              block per SM, weights loaded with the row)
  rt2         (stop 22) the 2-byte types keep blockDim.x at run time at 512 threads too (softmax
              bfloat16 at 16384 ran at 76% of copy with it fixed at compile time, float16 at 97%);
              also written for the softmax op, as smexp_rt2
  persist     (measured slower, stop 20: 69-89% of copy) one 1024-thread block per SM that loops over rows (1024 / threads rows at a
              time) and keeps the weights in shared memory, loaded once: a row's weights are then
              read from L2 once per SM instead of once per row (two weights of float32 re-read per
              16384-element row are as many bytes as the row itself)
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

LN = "(x - mean(x)) * rsqrt(mean((x - mean(x)) ** 2) + 1e-5) * w + b"
SOFTMAX = "exp(x - max(x)) / sum(exp(x - max(x)))"


def new(out: Path, name: str, expr: str, weights: str | None) -> Path:
    cmd = [sys.executable, "-m", "kernelgen", "new", name, "--kind", "rowwise", "--inputs", "x", "--expr", expr,
           "-o", str(out)]
    if weights:
        cmd += ["--weights", weights]
    subprocess.run(cmd, check=True)
    return out / name


def prefetch(text: str) -> str:
    """Load the output's weights right after the inputs, keep them in registers until the output."""
    loads = "  // weights of the output, loaded before the reductions\n"
    for w in ("w", "b"):
        loads += f"  Pack<scalar_t, kVec> {w}_pre[kPacks];\n"
    loads += ("#pragma unroll\n  for (int p = 0; p < kPacks; ++p) {\n"
              "    const int64_t col = (static_cast<int64_t>(p) * blockDim.x + threadIdx.x) * kVec;\n"
              "    if (col < limit) {\n      w_pre[p] = load<scalar_t, kVec>(w + col);\n"
              "      b_pre[p] = load<scalar_t, kVec>(b + col);\n    }\n  }\n\n")
    text = text.replace("  acc_t _r[kReductions];\n", loads + "  acc_t _r[kReductions];\n", 1)
    for w in ("w", "b"):
        old = f"      const Pack<scalar_t, kVec> {w}_p = load<scalar_t, kVec>({w} + col);\n"
        assert text.count(old) == 1, old
        text = text.replace(old, f"      const Pack<scalar_t, kVec> {w}_p = {w}_pre[p];\n")
    return text


LOAD_WITH_HINT = """
// Experiment: a 16-byte load with a cache hint (docs/device/rowwise_variants.py).
template <typename scalar_t, int kVec>
__device__ __forceinline__ Pack<scalar_t, kVec> %NAME%(const scalar_t* p) {
  if constexpr (sizeof(Pack<scalar_t, kVec>) == 16) {
    uint4 v;
    asm("%INSN% {%0, %1, %2, %3}, [%4];" : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w) : "l"(p));
    Pack<scalar_t, kVec> r;
    memcpy(&r, &v, 16);
    return r;
  } else {
    return load<scalar_t, kVec>(p);
  }
}
"""


def _load_with_hint(name: str, insn: str) -> str:
    return LOAD_WITH_HINT.replace("%NAME%", name).replace("%INSN%", insn)


def hinted(text: str, insn: str, keep_weights: bool) -> str:
    anchor = "// Reduces `value` over the threads of one row"
    helpers = _load_with_hint("load_hint", insn) + _load_with_hint("load_keep", "ld.global.nc.L1::evict_last.v4.u32")
    text = text.replace(anchor, helpers + "\n" + anchor, 1)
    old = "      x_p = load<scalar_t, kVec>(x + base + col);\n"
    assert text.count(old) == 1
    text = text.replace(old, "      x_p = load_hint<scalar_t, kVec>(x + base + col);\n")
    if keep_weights:
        for w in ("w", "b"):
            old = f"      const Pack<scalar_t, kVec> {w}_p = load<scalar_t, kVec>({w} + col);\n"
            assert text.count(old) == 1
            text = text.replace(old, f"      const Pack<scalar_t, kVec> {w}_p = load_keep<scalar_t, kVec>({w} + col);\n")
    return "#include <cstring>\n" + text


PERSISTENT = r"""
// ---- Experiment (docs/device/rowwise_variants.py, variant persist) ------------------------------
// One block of kPersistThreads per SM, looping over groups of rows; the weights live in shared memory
// (loaded once per block), so each row reads only its own elements from memory.
constexpr int kPersistThreads = 1024;

template <typename scalar_t, int kVec, int kPerThread>
__global__ void __launch_bounds__(kPersistThreads, 1)
lnexp_persistent_kernel(const scalar_t* __restrict__ x, const scalar_t* __restrict__ w, const scalar_t* __restrict__ b,
                        scalar_t* __restrict__ out, int64_t rows, int64_t cols) {
  using acc_t = opmath::opmath_type<scalar_t>;
  using pack_t = Pack<scalar_t, kVec>;
  constexpr int kPacks = kPerThread / kVec;
  extern __shared__ __align__(16) unsigned char persist_smem[];
  scalar_t* w_s = reinterpret_cast<scalar_t*>(persist_smem);
  scalar_t* b_s = w_s + cols;
  __shared__ acc_t scratch[kReductions][kPersistThreads / kWarp];
  const int flat = threadIdx.y * blockDim.x + threadIdx.x;
  for (int64_t i = int64_t{flat} * kVec; i < cols; i += int64_t{blockDim.x} * blockDim.y * kVec) {
    *reinterpret_cast<pack_t*>(w_s + i) = load<scalar_t, kVec>(w + i);
    *reinterpret_cast<pack_t*>(b_s + i) = load<scalar_t, kVec>(b + i);
  }
  __syncthreads();
  for (int64_t first = int64_t{blockIdx.x} * blockDim.y; first < rows; first += int64_t{gridDim.x} * blockDim.y) {
    const int64_t row = first + threadIdx.y;
    const int64_t limit = row < rows ? cols : 0;
    const int64_t base = row * cols;
    acc_t x_v[kPerThread];
#pragma unroll
    for (int p = 0; p < kPacks; ++p) {
      const int64_t col = (static_cast<int64_t>(p) * blockDim.x + threadIdx.x) * kVec;
      pack_t x_p{};
      if (col < limit) {
        x_p = load<scalar_t, kVec>(x + base + col);
      }
#pragma unroll
      for (int k = 0; k < kVec; ++k) {
        x_v[p * kVec + k] = static_cast<acc_t>(x_p.v[k]);
      }
    }
    acc_t _r[kReductions];
    {
      acc_t acc = Reduce0<acc_t>::identity();
#pragma unroll
      for (int p = 0; p < kPacks; ++p) {
        const int64_t col = (static_cast<int64_t>(p) * blockDim.x + threadIdx.x) * kVec;
        if (col < limit) {
#pragma unroll
          for (int k = 0; k < kVec; ++k) {
            acc = Reduce0<acc_t>::combine(acc, lnexp_reduce0_arg<acc_t>(x_v[p * kVec + k], acc_t(0), acc_t(0), _r));
          }
        }
      }
      _r[0] = row_reduce<Reduce0<acc_t>>(acc, scratch[0]);
      if constexpr (kMean0) {
        _r[0] /= static_cast<acc_t>(cols);
      }
    }
    {
      acc_t acc = Reduce1<acc_t>::identity();
#pragma unroll
      for (int p = 0; p < kPacks; ++p) {
        const int64_t col = (static_cast<int64_t>(p) * blockDim.x + threadIdx.x) * kVec;
        if (col < limit) {
#pragma unroll
          for (int k = 0; k < kVec; ++k) {
            acc = Reduce1<acc_t>::combine(acc, lnexp_reduce1_arg<acc_t>(x_v[p * kVec + k], acc_t(0), acc_t(0), _r));
          }
        }
      }
      _r[1] = row_reduce<Reduce1<acc_t>>(acc, scratch[1]);
      if constexpr (kMean1) {
        _r[1] /= static_cast<acc_t>(cols);
      }
    }
#pragma unroll
    for (int p = 0; p < kPacks; ++p) {
      const int64_t col = (static_cast<int64_t>(p) * blockDim.x + threadIdx.x) * kVec;
      if (col < limit) {
        const pack_t w_p = *reinterpret_cast<const pack_t*>(w_s + col);
        const pack_t b_p = *reinterpret_cast<const pack_t*>(b_s + col);
        pack_t result;
#pragma unroll
        for (int k = 0; k < kVec; ++k) {
          result.v[k] = static_cast<scalar_t>(lnexp_out<acc_t>(x_v[p * kVec + k], static_cast<acc_t>(w_p.v[k]),
                                                               static_cast<acc_t>(b_p.v[k]), _r));
        }
        *reinterpret_cast<pack_t*>(out + base + col) = result;
      }
    }
    __syncthreads();  // the next group reuses scratch
  }
}

template <typename scalar_t, int kVec>
bool launch_persistent(const scalar_t* x, const scalar_t* w, const scalar_t* b, scalar_t* out, int64_t rows,
                       int64_t cols, cudaStream_t stream) {
  const size_t smem = 2 * static_cast<size_t>(cols) * sizeof(scalar_t);
  if (kVec == 1 || cols > kMaxRegisterCols || smem > 200 * 1024) {
    return false;
  }
  const bool short_rows = cols <= kMaxShortCols;
  int threads = kWarp;
  while (threads < kMaxThreads && int64_t{threads} * kShortPerThread < cols) {
    threads *= 2;
  }
  const dim3 block(threads, kPersistThreads / threads);
  int device = 0;
  int sms = 0;
  STD_CUDA_CHECK(cudaGetDevice(&device));
  STD_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
  const int64_t groups = (rows + block.y - 1) / block.y;
  const unsigned int grid = static_cast<unsigned int>(std::min<int64_t>(groups, sms));
  if (short_rows) {
    auto kernel = lnexp_persistent_kernel<scalar_t, kVec, kShortPerThread>;
    STD_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(smem)));
    kernel<<<grid, block, smem, stream>>>(x, w, b, out, rows, cols);
  } else {
    auto kernel = lnexp_persistent_kernel<scalar_t, kVec, kLongPerThread>;
    STD_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(smem)));
    kernel<<<grid, block, smem, stream>>>(x, w, b, out, rows, cols);
  }
  STD_CUDA_KERNEL_LAUNCH_CHECK();
  return true;
}
// ---- end of the experiment --------------------------------------------------------------------------
"""


SMEM = r"""
// ---- Experiment (docs/device/rowwise_variants.py, variant smem) ----------------------------------
// Rows of kMaxShortCols+1 .. kMaxRegisterCols elements held in shared memory instead of registers:
// 256 threads copy the row with cp.async (16 bytes each, straight into shared memory, no registers
// held while the loads are in flight), then every reduction and the output read it from there. A
// float32 row of 16384 is 64 KB: 3 rows per SM in flight, against 2 for the 512-thread register
// kernel at 64 registers.
constexpr int kSmemThreads = 256;

template <typename scalar_t, int kVec>
__global__ void __launch_bounds__(kSmemThreads)
lnexp_smem_kernel(const scalar_t* __restrict__ x, const scalar_t* __restrict__ w, const scalar_t* __restrict__ b,
                  scalar_t* __restrict__ out, int64_t cols) {
  using acc_t = opmath::opmath_type<scalar_t>;
  using pack_t = Pack<scalar_t, kVec>;
  extern __shared__ __align__(16) unsigned char smem_row[];
  scalar_t* row_s = reinterpret_cast<scalar_t*>(smem_row);
  __shared__ acc_t scratch[kReductions][kMaxThreads / kWarp];
  const int64_t base = static_cast<int64_t>(blockIdx.x) * cols;
  const int64_t step = static_cast<int64_t>(kSmemThreads) * kVec;
  for (int64_t col = static_cast<int64_t>(threadIdx.x) * kVec; col < cols; col += step) {
    __pipeline_memcpy_async(row_s + col, x + base + col, sizeof(pack_t));
  }
  __pipeline_commit();
  __pipeline_wait_prior(0);
  __syncthreads();
  acc_t _r[kReductions];
  {
    acc_t acc = Reduce0<acc_t>::identity();
    for (int64_t col = static_cast<int64_t>(threadIdx.x) * kVec; col < cols; col += step) {
      const pack_t x_p = *reinterpret_cast<const pack_t*>(row_s + col);
#pragma unroll
      for (int k = 0; k < kVec; ++k) {
        acc = Reduce0<acc_t>::combine(acc, lnexp_reduce0_arg<acc_t>(static_cast<acc_t>(x_p.v[k]), acc_t(0), acc_t(0), _r));
      }
    }
    _r[0] = row_reduce<Reduce0<acc_t>>(acc, scratch[0]);
    if constexpr (kMean0) {
      _r[0] /= static_cast<acc_t>(cols);
    }
  }
  {
    acc_t acc = Reduce1<acc_t>::identity();
    for (int64_t col = static_cast<int64_t>(threadIdx.x) * kVec; col < cols; col += step) {
      const pack_t x_p = *reinterpret_cast<const pack_t*>(row_s + col);
#pragma unroll
      for (int k = 0; k < kVec; ++k) {
        acc = Reduce1<acc_t>::combine(acc, lnexp_reduce1_arg<acc_t>(static_cast<acc_t>(x_p.v[k]), acc_t(0), acc_t(0), _r));
      }
    }
    _r[1] = row_reduce<Reduce1<acc_t>>(acc, scratch[1]);
    if constexpr (kMean1) {
      _r[1] /= static_cast<acc_t>(cols);
    }
  }
  for (int64_t col = static_cast<int64_t>(threadIdx.x) * kVec; col < cols; col += step) {
    const pack_t x_p = *reinterpret_cast<const pack_t*>(row_s + col);
    const pack_t w_p = load<scalar_t, kVec>(w + col);
    const pack_t b_p = load<scalar_t, kVec>(b + col);
    pack_t result;
#pragma unroll
    for (int k = 0; k < kVec; ++k) {
      result.v[k] = static_cast<scalar_t>(lnexp_out<acc_t>(static_cast<acc_t>(x_p.v[k]), static_cast<acc_t>(w_p.v[k]),
                                                           static_cast<acc_t>(b_p.v[k]), _r));
    }
    *reinterpret_cast<pack_t*>(out + base + col) = result;
  }
}

template <typename scalar_t, int kVec>
bool launch_smem(const scalar_t* x, const scalar_t* w, const scalar_t* b, scalar_t* out, int64_t rows, int64_t cols,
                 cudaStream_t stream) {
  if (kVec == 1 || rows == 0 || cols <= kMaxShortCols || cols > kMaxRegisterCols || rows > kMaxBlocks) {
    return false;
  }
  const size_t bytes = static_cast<size_t>(cols) * sizeof(scalar_t);
  STD_CUDA_CHECK(cudaFuncSetAttribute(lnexp_smem_kernel<scalar_t, kVec>, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                      static_cast<int>(bytes)));
  lnexp_smem_kernel<scalar_t, kVec><<<static_cast<unsigned int>(rows), kSmemThreads, bytes, stream>>>(x, w, b, out, cols);
  STD_CUDA_KERNEL_LAUNCH_CHECK();
  return true;
}
// ---- end of the experiment --------------------------------------------------------------------------
"""


def smem(text: str) -> str:
    anchor = "bool is_aligned(const void* ptr) {"
    assert anchor in text
    text = text.replace(anchor, SMEM + "\n" + anchor, 1)
    text = "#include <cuda_pipeline.h>\n" + text  # at file scope, before the op's namespaces
    old = "  if (cols > kMaxRegisterCols) {\n"
    assert text.count(old) == 1
    return text.replace(old, "  if (launch_smem<scalar_t, kVec>(x, w, b, out, rows, cols, stream)) {\n"
                             "    return;\n  }\n" + old, 1)


def persistent(text: str) -> str:
    anchor = "bool is_aligned(const void* ptr) {"
    assert anchor in text
    text = text.replace(anchor, PERSISTENT + "\n" + anchor, 1)
    old = "  if (cols > kMaxRegisterCols) {\n"
    assert text.count(old) == 1
    return text.replace(old, "  if (rows > 0 && launch_persistent<scalar_t, kVec>(x, w, b, out, rows, cols, stream)) {\n"
                             "    return;\n  }\n" + old, 1)


TREE_OLD = """    value = mine[0];
    for (int warp = 1; warp < warps; ++warp) {
      value = Op::combine(value, mine[warp]);
    }
"""
TREE_NEW = """    // Experiment (tree): lane l takes warp l's partial, then a butterfly over the warps (a power of two).
    const int lane = threadIdx.x % kWarp;
    value = lane < warps ? mine[lane] : Op::identity();
    for (int offset = warps / 2; offset > 0; offset /= 2) {
      value = Op::combine(value, __shfl_xor_sync(0xffffffffu, value, offset));
    }
    value = __shfl_sync(0xffffffffu, value, 0);
"""


def tree(text: str) -> str:
    """The cross-warp step of row_reduce as one shared-memory load and a butterfly of shuffles, instead
    of every thread folding all the warps' partials from shared memory one after another (16
    dependent loads for a 512-thread row). Triton's tl.sum does the former (its LayerNorm at 16384
    float32: 99% of copy, ours 76%)."""
    return _sub(text, TREE_OLD, TREE_NEW)


def _sub(text: str, old: str, new: str) -> str:
    assert text.count(old) == 1, old
    return text.replace(old, new)


def main(out: Path) -> None:
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    base = new(out, "lnexp", LN, "w,b")
    new(out, "smexp", SOFTMAX, None)
    kernel = Path("lnexp/csrc/lnexp/cuda/lnexp_kernel.cu")
    text = (base / kernel).read_text()
    lb = "__global__ void __launch_bounds__(kMaxThreads, 2)\nlnexp_rows_kernel"
    assert lb in text
    variants = {
        "pre": prefetch(text),
        "pre_lb1": prefetch(text).replace(lb, lb.replace(", 2)", ", kPerThread == kLongPerThread ? 1 : 2)")),
        "t1024_pre": re.sub(r"constexpr int kMaxThreads = 512;", "constexpr int kMaxThreads = 1024;",
                            re.sub(r"constexpr int kLongPerThread = 32;", "constexpr int kLongPerThread = 16;",
                                   prefetch(text).replace(lb, lb.replace(", 2)", ", 1)")))),
    }
    variants["na"] = hinted(text, "ld.global.L1::no_allocate.v4.u32", False)
    variants["cs"] = hinted(text, "ld.global.cs.v4.u32", False)
    variants["na_wl"] = hinted(text, "ld.global.L1::no_allocate.v4.u32", True)
    variants["persist"] = persistent(text)
    variants["mp"] = _sub(text, "constexpr int64_t kMaxRegisterCols = int64_t{kLongPerThread} * kMaxThreads;",
                          "constexpr int64_t kMaxRegisterCols = kMaxShortCols;")
    # h32 (the 2-byte dtypes at 32 elements per thread) is the template since stop 20
    variants["smem"] = smem(text)
    variants["lb3"] = _sub(text, lb, lb.replace(", 2)", ", kPerThread == kShortPerThread ? 3 : 2)"))
    rt2_old = "    if (threads == kMaxThreads) {\n"
    rt2_new = "    if (sizeof(scalar_t) > 2 && threads == kMaxThreads) {\n"
    variants["rt2"] = _sub(text, rt2_old, rt2_new)
    sm_kernel = Path("smexp/csrc/smexp/cuda/smexp_kernel.cu")
    sm_text = (out / "smexp" / sm_kernel).read_text()
    shutil.copytree(out / "smexp", out / "smexp_rt2")
    (out / "smexp_rt2" / sm_kernel).write_text(_sub(sm_text, rt2_old, rt2_new))
    # tree, tree_lb1, tree_pre_lb1 (stop 22): measured; tree is in the template since, and na_wl's
    # and the others' edits no longer apply to it.
    for name in ("pre", "pre_lb1", "t1024_pre", "na", "cs", "na_wl", "persist", "mp", "lb3", "smem"):  # measured (docs/archive/benchmarks-history.md)
        del variants[name]
    for name, variant in variants.items():
        assert variant != text, name
        target = out / f"lnexp_{name}"
        shutil.copytree(base, target)
        (target / kernel).write_text(variant)
    print("wrote", out)


if __name__ == "__main__":
    main(Path(sys.argv[1]))
