// log_softmax_kernel.cu: the CUDA kernels of myteam::log_softmax and their launcher.
// The tensor side (checks, device guard, allocation, stream, dtype dispatch, registration) is in
// log_softmax_cuda.cpp. This file sees raw pointers only and includes no tensor headers: nvcc spends
// most of a build parsing them, and the kernel needs none.
//
// A rowwise op reads each row, reduces it one or more times (max(x), sum(exp(x - max(x)))) and
// writes a row of the same length. Like an elementwise op it does a few flops per byte and is limited
// by memory bandwidth, so the kernels are built to read every element from HBM once and write it
// once:
//   * Rows of up to kMaxRegisterCols elements (16384) are held in registers: each thread loads
//     a fixed number of elements of every input, all loads issued before any math, and every reduction and
//     the output then run on those registers. One warp per row for rows up to 512 elements (1024 in
//     float16/bfloat16; four rows per block), up to 16 warps per row above (see kShortPerThread and
//     kLongPerThread).
//   * Longer rows take a multi-pass kernel: one block per row, each reduction a loop over the row
//     (re-read from memory, which the L2 cache partly absorbs), then the output loop.
//   * 16-byte loads and stores (4 float32 or 8 float16/bfloat16 elements) when every row starts
//     16-byte aligned: the row length is a multiple of the vector and every pointer is aligned.
//     Otherwise, one element per access.
//   * Reductions run in the op-math type (float for the half types, double for float64): each thread
//     folds its own elements in order, then a butterfly of warp shuffles, and for rows of several
//     warps a second butterfly over the warps' results (row_reduce). The order never changes from
//     run to run, so the results are bitwise reproducible.
//   * int64 row offsets: rows * cols may pass 2^31.
// The formula itself is in ../log_softmax.h, shared with the CPU code.

#include <cuda_runtime_api.h>
// STD_CUDA_CHECK, STD_CUDA_KERNEL_LAUNCH_CHECK: C10_CUDA_CHECK's stable twins; they need
// -DUSE_CUDA, which _build.py sets.
#include <torch/csrc/stable/macros.h>
#include <torch/headeronly/util/BFloat16.h>
#include <torch/headeronly/util/Half.h>

#include <algorithm>
#include <cstdint>

#include "../log_softmax.h"
#include "log_softmax_kernel.h"

namespace log_softmax {
namespace {

constexpr int kWarp = 32;
constexpr int kVectorBytes = 16;  // the widest load one thread can issue
// Elements of each input one thread holds in registers: kShortPerThread (4 16-byte packs of float32,
// 2 of the half types) for rows of up to kShortPerThread * kMaxThreads = 8192 elements, with as many
// threads as that takes; kLongPerThread at kMaxThreads threads for rows of up to 16384. Measured on an
// H100 at 2^26 elements (docs/benchmarks.md in kernelgen): 32 elements per thread everywhere ran
// LayerNorm float32 at 76-89% of a copy's bandwidth (spilling registers); 16 everywhere, at up to
// 1024 threads, lost at 16384 (60% in float16). Fewer elements per thread mean more threads per row
// to hide each load's and each reduction's latency, up to where the block's barriers cost more.
// float16 and bfloat16 take kLongPerThread at every length: 16 of them are only 32 bytes in flight
// per thread, and LayerNorm at rows of 4096 ran at 87-88% of a copy with 16 per thread (256 threads
// a row), 97-98% with 32 (128 threads), as float32 runs with 16 (64 bytes either way).
constexpr int kShortPerThread = 16;
constexpr int kLongPerThread = 32;
constexpr int kMaxThreads = 512;
constexpr int64_t kMaxShortCols = int64_t{kShortPerThread} * kMaxThreads;
constexpr int64_t kMaxRegisterCols = int64_t{kLongPerThread} * kMaxThreads;
// Threads per block for short rows: 4 one-warp rows per block.
constexpr int kRowBlockThreads = 128;
// The hardware limit on gridDim.x; a launch covers at most this many blocks.
constexpr int64_t kMaxBlocks = 2147483647;

// kVec elements moved as one 16-byte access (one ld.global.v4 / st.global.v4).
template <typename scalar_t, int kVec>
struct alignas(sizeof(scalar_t) * kVec) Pack {
  scalar_t v[kVec];
};

template <typename scalar_t, int kVec>
__device__ __forceinline__ Pack<scalar_t, kVec> load(const scalar_t* p) {
  return *reinterpret_cast<const Pack<scalar_t, kVec>*>(p);
}

// Reduces `value` over the threads of one row (`threads` of them, a power of two from 32): a
// butterfly of shuffles in each warp; then, for rows of several warps, each warp's lane 0 writes its
// result to shared memory, and after one barrier every warp reads them back, lane l taking warp l's,
// and folds them with a second butterfly. (Every thread folding all the warps' results one after
// another, 16 dependent shared-memory loads for a 512-thread row, ran LayerNorm at rows of 16384
// 2% slower in float16/bfloat16.) The tree never changes, so the results are bitwise reproducible,
// and every thread of the row gets the same value.
template <typename Op, typename acc_t>
__device__ __forceinline__ acc_t row_reduce(acc_t value, acc_t* scratch, int threads) {
#pragma unroll
  for (int offset = kWarp / 2; offset > 0; offset /= 2) {
    value = Op::combine(value, __shfl_xor_sync(0xffffffffu, value, offset));
  }
  // The butterfly leaves the same value in every lane, except that max(+0, -0) depends on the
  // operands' order: take lane 0's, so that every thread works with one value.
  value = __shfl_sync(0xffffffffu, value, 0);
  const int warps = threads / kWarp;
  if (warps > 1) {  // the same for the whole block: no thread skips the barrier
    acc_t* mine = scratch + threadIdx.y * warps;
    const int lane = threadIdx.x % kWarp;
    if (lane == 0) {
      mine[threadIdx.x / kWarp] = value;
    }
    __syncthreads();
    value = lane < warps ? mine[lane] : Op::identity();
    for (int offset = warps / 2; offset > 0; offset /= 2) {
      value = Op::combine(value, __shfl_xor_sync(0xffffffffu, value, offset));
    }
    value = __shfl_sync(0xffffffffu, value, 0);
  }
  return value;
}

// Rows of up to kMaxRegisterCols elements. Block (threads per row) x (blockDim.y rows); thread t of
// a row holds elements [(p * threads + t) * kVec, ... + kVec) for p < kPerThread / kVec.
// At most 64 registers per thread (two blocks of kMaxThreads per SM), so that enough warps are resident.
// kThreads: the threads per row when the launch fixes it at compile time (kMaxThreads, the longest
// rows of float32/float64), else 0 (blockDim.x). With it every access of a row is one pointer plus a
// constant offset; with blockDim.x known only at run time the compiler kept an address per pack and
// spilled registers at the 64-register cap: LayerNorm at rows of 16384 float32 ran at 76% of a
// copy's bandwidth with 458,752 local-memory requests per launch (ncu), 98% with it.
template <typename scalar_t, int kVec, int kPerThread, int kThreads>
__global__ void __launch_bounds__(kMaxThreads, 2)
log_softmax_rows_kernel(const scalar_t* __restrict__ x, scalar_t* __restrict__ out, int64_t rows, int64_t cols) {
  using acc_t = opmath::opmath_type<scalar_t>;
  constexpr int kPacks = kPerThread / kVec;
  // One slot per warp and reduction (kMaxThreads / kWarp warps per block, whatever the shape).
  __shared__ acc_t scratch[kReductions][kMaxThreads / kWarp];
  const int threads = kThreads > 0 ? kThreads : static_cast<int>(blockDim.x);
  const int64_t row = static_cast<int64_t>(blockIdx.x) * blockDim.y + threadIdx.y;
  // A block's last rows may lie past the end: their threads load and store nothing but still take
  // part in every barrier of the block. Column offsets fit an int: cols <= kMaxRegisterCols here.
  const int limit = row < rows ? static_cast<int>(cols) : 0;
  const int64_t base = row * cols;
  const int first = static_cast<int>(threadIdx.x) * kVec;

  // ---- load the row: all loads first, so that they are in flight together ----
  acc_t x_v[kPerThread];
#pragma unroll
  for (int p = 0; p < kPacks; ++p) {
    const int col = p * threads * kVec + first;
    Pack<scalar_t, kVec> x_p{};
    if (col < limit) {
      x_p = load<scalar_t, kVec>(x + base + col);
    }
#pragma unroll
    for (int k = 0; k < kVec; ++k) {
      x_v[p * kVec + k] = static_cast<acc_t>(x_p.v[k]);
    }
  }

  acc_t _r[kReductions];
  // ---- _r[0] = max(x) ----
  {
    acc_t acc = Reduce0<acc_t>::identity();
#pragma unroll
    for (int p = 0; p < kPacks; ++p) {
      const int col = p * threads * kVec + first;
      if (col < limit) {
#pragma unroll
        for (int k = 0; k < kVec; ++k) {
          const acc_t value = log_softmax_reduce0_arg<acc_t>(
              x_v[p * kVec + k], _r);
          acc = Reduce0<acc_t>::combine(acc, value);
        }
      }
    }
    _r[0] = row_reduce<Reduce0<acc_t>>(acc, scratch[0], threads);
    if constexpr (kMean0) {
      _r[0] /= static_cast<acc_t>(cols);
    }
  }
  // ---- _r[1] = sum(exp(x - max(x))) ----
  {
    acc_t acc = Reduce1<acc_t>::identity();
#pragma unroll
    for (int p = 0; p < kPacks; ++p) {
      const int col = p * threads * kVec + first;
      if (col < limit) {
#pragma unroll
        for (int k = 0; k < kVec; ++k) {
          const acc_t value = log_softmax_reduce1_arg<acc_t>(
              x_v[p * kVec + k], _r);
          acc = Reduce1<acc_t>::combine(acc, value);
        }
      }
    }
    _r[1] = row_reduce<Reduce1<acc_t>>(acc, scratch[1], threads);
    if constexpr (kMean1) {
      _r[1] /= static_cast<acc_t>(cols);
    }
  }

  // ---- the output ----
#pragma unroll
  for (int p = 0; p < kPacks; ++p) {
    const int col = p * threads * kVec + first;
    if (col < limit) {
      Pack<scalar_t, kVec> result;
#pragma unroll
      for (int k = 0; k < kVec; ++k) {
        result.v[k] = static_cast<scalar_t>(log_softmax_out<acc_t>(
            x_v[p * kVec + k], _r));
      }
      *reinterpret_cast<Pack<scalar_t, kVec>*>(out + base + col) = result;
    }
  }
}

// Rows longer than kMaxRegisterCols: one block of kMaxThreads threads per row. Each reduction is a
// loop over the row, and so is the output: the row is read 3 times (from L2 when it still
// holds it), written once.
template <typename scalar_t, int kVec>
__global__ void __launch_bounds__(kMaxThreads)
log_softmax_long_rows_kernel(const scalar_t* __restrict__ x, scalar_t* __restrict__ out, int64_t cols) {
  using acc_t = opmath::opmath_type<scalar_t>;
  __shared__ acc_t scratch[kReductions][kMaxThreads / kWarp];
  const int64_t base = static_cast<int64_t>(blockIdx.x) * cols;
  const int64_t stride = static_cast<int64_t>(blockDim.x) * kVec;
  acc_t _r[kReductions];
  // ---- _r[0] = max(x) ----
  {
    acc_t acc = Reduce0<acc_t>::identity();
    for (int64_t col = static_cast<int64_t>(threadIdx.x) * kVec; col < cols; col += stride) {
      const Pack<scalar_t, kVec> x_p = load<scalar_t, kVec>(x + base + col);
#pragma unroll
      for (int k = 0; k < kVec; ++k) {
        acc = Reduce0<acc_t>::combine(acc, log_softmax_reduce0_arg<acc_t>(
            static_cast<acc_t>(x_p.v[k]), _r));
      }
    }
    _r[0] = row_reduce<Reduce0<acc_t>>(acc, scratch[0], kMaxThreads);
    if constexpr (kMean0) {
      _r[0] /= static_cast<acc_t>(cols);
    }
  }
  // ---- _r[1] = sum(exp(x - max(x))) ----
  {
    acc_t acc = Reduce1<acc_t>::identity();
    for (int64_t col = static_cast<int64_t>(threadIdx.x) * kVec; col < cols; col += stride) {
      const Pack<scalar_t, kVec> x_p = load<scalar_t, kVec>(x + base + col);
#pragma unroll
      for (int k = 0; k < kVec; ++k) {
        acc = Reduce1<acc_t>::combine(acc, log_softmax_reduce1_arg<acc_t>(
            static_cast<acc_t>(x_p.v[k]), _r));
      }
    }
    _r[1] = row_reduce<Reduce1<acc_t>>(acc, scratch[1], kMaxThreads);
    if constexpr (kMean1) {
      _r[1] /= static_cast<acc_t>(cols);
    }
  }
  // ---- the output ----
  for (int64_t col = static_cast<int64_t>(threadIdx.x) * kVec; col < cols; col += stride) {
    const Pack<scalar_t, kVec> x_p = load<scalar_t, kVec>(x + base + col);
    Pack<scalar_t, kVec> result;
#pragma unroll
    for (int k = 0; k < kVec; ++k) {
      result.v[k] = static_cast<scalar_t>(log_softmax_out<acc_t>(
          static_cast<acc_t>(x_p.v[k]), _r));
    }
    *reinterpret_cast<Pack<scalar_t, kVec>*>(out + base + col) = result;
  }
}

bool is_aligned(const void* ptr) {
  return reinterpret_cast<std::uintptr_t>(ptr) % kVectorBytes == 0;
}

// Rows of up to kPerThread * kMaxThreads elements, held in registers.
template <typename scalar_t, int kVec, int kPerThread>
void launch_register_rows(const scalar_t* __restrict__ x, scalar_t* __restrict__ out, int64_t rows, int64_t cols, cudaStream_t stream) {
  // Threads per row: a power of two from one warp to kMaxThreads, enough for kPerThread elements each.
  // At kMaxThreads, float32/float64 take the kernel with the thread count fixed at compile time. The
  // 2-byte types do not: their kernels did not spill without it, and with it the bfloat16 softmax at
  // rows of 16384 ran at 76% of a copy's bandwidth against 97% (same instruction count and
  // occupancy, more stalls per instruction: ncu, docs/benchmarks.md in kernelgen).
  constexpr bool kFixedThreads = sizeof(scalar_t) > 2;
  int threads = kWarp;
  while (threads < kMaxThreads && int64_t{threads} * kPerThread < cols) {
    threads *= 2;
  }
  const int rows_per_block = std::max(1, kRowBlockThreads / threads);
  const dim3 block(threads, rows_per_block);
  const int64_t max_rows = kMaxBlocks * rows_per_block;
  for (int64_t start = 0; start < rows; start += max_rows) {
    const int64_t count = std::min(rows - start, max_rows);
    const int64_t offset = start * cols;
    const auto blocks = static_cast<unsigned int>((count + rows_per_block - 1) / rows_per_block);
    if (kFixedThreads && threads == kMaxThreads) {
      log_softmax_rows_kernel<scalar_t, kVec, kPerThread, kFixedThreads ? kMaxThreads : 0><<<blocks, block, 0, stream>>>(
          x + offset, out + offset, count, cols);
    } else {
      log_softmax_rows_kernel<scalar_t, kVec, kPerThread, 0><<<blocks, block, 0, stream>>>(
          x + offset, out + offset, count, cols);
    }
    // Kernel launches are asynchronous: a bad launch configuration is only reported by the next
    // CUDA call, far from its cause, unless it is checked right here.
    STD_CUDA_KERNEL_LAUNCH_CHECK();
  }
}

template <typename scalar_t, int kVec>
void launch_rows(const scalar_t* __restrict__ x, scalar_t* __restrict__ out, int64_t rows, int64_t cols, cudaStream_t stream) {
  if (cols > kMaxRegisterCols) {
    // One block per row; a grid of more than kMaxBlocks rows is split into several launches.
    for (int64_t start = 0; start < rows; start += kMaxBlocks) {
      const int64_t count = std::min(rows - start, kMaxBlocks);
      const int64_t offset = start * cols;
      log_softmax_long_rows_kernel<scalar_t, kVec><<<static_cast<unsigned int>(count), kMaxThreads, 0, stream>>>(
          x + offset, out + offset, cols);
      STD_CUDA_KERNEL_LAUNCH_CHECK();  // as in launch_register_rows
    }
    return;
  }
  // kShortPerThread elements per thread for float32/float64 rows of up to kMaxShortCols elements;
  // kLongPerThread for the 2-byte types, and for longer rows.
  if constexpr (sizeof(scalar_t) > 2) {
    if (cols <= kMaxShortCols) {
      launch_register_rows<scalar_t, kVec, kShortPerThread>(x, out, rows, cols, stream);
      return;
    }
  }
  launch_register_rows<scalar_t, kVec, kLongPerThread>(x, out, rows, cols, stream);
}

}  // namespace

template <typename scalar_t>
void launch_log_softmax(const scalar_t* x, scalar_t* out, int64_t rows, int64_t cols,
                       cudaStream_t stream) {
  constexpr int kVec = kVectorBytes / sizeof(scalar_t);
  // Every row starts 16-byte aligned when the row length is a multiple of the vector and the
  // pointers are aligned (a view such as x[1:] starts one element into its storage: it is not).
  if (cols % kVec == 0 && is_aligned(x) && is_aligned(out)) {
    launch_rows<scalar_t, kVec>(x, out, rows, cols, stream);
  } else {
    launch_rows<scalar_t, 1>(x, out, rows, cols, stream);
  }
}

// One instantiation per supported dtype; log_softmax_cuda.cpp calls them from its dtype dispatch.
template void launch_log_softmax<float>(const float*, float*, int64_t, int64_t, cudaStream_t);
template void launch_log_softmax<double>(const double*, double*, int64_t, int64_t, cudaStream_t);
template void launch_log_softmax<torch::headeronly::Half>(const torch::headeronly::Half*, torch::headeronly::Half*, int64_t, int64_t, cudaStream_t);
template void launch_log_softmax<torch::headeronly::BFloat16>(const torch::headeronly::BFloat16*, torch::headeronly::BFloat16*, int64_t, int64_t, cudaStream_t);

}  // namespace log_softmax
