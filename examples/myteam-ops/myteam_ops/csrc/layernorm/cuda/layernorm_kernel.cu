// layernorm_kernel.cu: the CUDA kernels of myteam::layernorm and their launcher.
// The tensor side (checks, device guard, allocation, stream, dtype dispatch, registration) is in
// layernorm_cuda.cpp. This file sees raw pointers only and includes no tensor headers: nvcc spends
// most of a build parsing them, and the kernel needs none.
//
// A rowwise op reads each row, reduces it one or more times (mean(x), mean((x - mean(x)) ** 2.0)) and
// writes a row of the same length. Like an elementwise op it does a few flops per byte and is limited
// by memory bandwidth, so the kernels are built to read every element from HBM once and write it
// once:
//   * Rows of up to kMaxRegisterCols elements (16384) are held in registers: each thread loads
//     a fixed number of elements of every input, all loads issued before any math, and every reduction and
//     the output then run on those registers. The row stays in the inputs' own type (two float16 or
//     bfloat16 elements per register) and is widened where it is used. How many elements one thread
//     holds follows from how many row-sized values the kernel keeps (per_thread below): one warp per
//     row for short rows (four rows per block), up to 16 warps per row above, 32 when the row's values
//     fill a thread's registers at 16 warps.
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
// The formula itself is in ../layernorm.h, shared with the CPU code.

#include <cuda_runtime_api.h>
// STD_CUDA_CHECK, STD_CUDA_KERNEL_LAUNCH_CHECK: C10_CUDA_CHECK's stable twins; they need
// -DUSE_CUDA, which _build.py sets.
#include <torch/csrc/stable/macros.h>
#include <torch/headeronly/util/BFloat16.h>
#include <torch/headeronly/util/Half.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "../layernorm.h"
#include "layernorm_kernel.h"

namespace layernorm {
namespace {

constexpr int kWarp = 32;
constexpr int kVectorBytes = 16;  // the widest load one thread can issue
// Elements of each input one thread holds in registers: kShortPerThread (4 16-byte packs of float32,
// 2 of the half types) for rows of up to kShortPerThread * kMaxThreads = 8192 elements, with as many
// threads as that takes; kLongPerThread at kMaxThreads threads for rows of up to 16384. On an H100 at
// 2^26 elements, 32 elements per thread everywhere runs LayerNorm float32 at 76-89% of a copy's
// bandwidth (it spills registers); 16 everywhere, at up to 1024 threads, loses at 16384 (60% in
// float16). Fewer elements per thread mean more threads per row
// to hide each load's and each reduction's latency, up to where the block's barriers cost more.
// float16 and bfloat16 take kLongPerThread at every length: 16 of them are only 32 bytes in flight
// per thread, and LayerNorm at rows of 4096 runs at 87-88% of a copy with 16 per thread (256 threads
// a row), 97-98% with 32 (128 threads), as float32 runs with 16 (64 bytes either way).
constexpr int kShortPerThread = 16;
constexpr int kLongPerThread = 32;
constexpr int kMaxThreads = 512;
constexpr int64_t kMaxShortCols = int64_t{kShortPerThread} * kMaxThreads;
constexpr int64_t kMaxRegisterCols = int64_t{kLongPerThread} * kMaxThreads;
// A row whose values do not fit kLongPerThread per thread takes up to kWideThreads threads of fewer
// elements each (one 1024-thread block per SM, the same 64 registers per thread as two of 512).
constexpr int kWideThreads = 1024;
// Registers per thread the row's values may take, of the 64 the kernel has (__launch_bounds__ below):
// the rest hold addresses, the reductions' partial results and the math. ptxas at sm_90: RMSNorm
// (one float32 input at 32 per thread) and the two-input (x + res) RMSNorm in bfloat16 (2 x 32
// elements in 32 registers) use 59-62 registers without spilling; the same two inputs in float32 at
// 32 per thread (64 registers of row) spill 152 bytes, and in bfloat16 held as 64 floats, 200 bytes.
constexpr int kRowRegisters = 32;
// The row-sized values the register kernel keeps: each input, in its own type, and the reduction
// argument the output reuses (in acc_t, see the kernel), which replaces them: the output then reads no
// input, so the inputs' registers are free once it is computed.
constexpr int kInputs = 1;
constexpr bool kKeepsArgument = false;

// Registers one thread's share of the row takes at `per_thread` elements of every input. Loaded one by
// one (kVec 1), a 2-byte element takes a register of its own.
template <typename scalar_t, int kVec>
constexpr int row_registers(int per_thread) {
  const int bytes = kVec > 1 ? static_cast<int>(sizeof(scalar_t)) : std::max(4, static_cast<int>(sizeof(scalar_t)));
  const int inputs = kInputs * per_thread * bytes / 4;
  const int kept = kKeepsArgument ? per_thread * static_cast<int>(sizeof(opmath::opmath_type<scalar_t>)) / 4 : 0;
  return std::max(inputs, kept);
}

// Elements of each input one thread holds (for float32/float64, in rows longer than kMaxShortCols):
// kLongPerThread, halved while the row's values would take more than kRowRegisters, down to one pack.
// A spilled row costs far more than the extra threads: the two-input RMSNorm in bfloat16 ran at 32% of
// a copy's bandwidth spilling.
template <typename scalar_t, int kVec>
constexpr int per_thread() {
  int count = kLongPerThread;
  while (count > kVec && row_registers<scalar_t, kVec>(count) > kRowRegisters) {
    count /= 2;
  }
  return count;
}

// The longest row the register kernel takes for this type: kMaxRegisterCols, or fewer when the
// row's values do not fit kWideThreads threads (4 float32 inputs: 8 per thread, 8192).
template <typename scalar_t, int kVec>
constexpr int64_t max_register_cols() {
  return std::min(kMaxRegisterCols, int64_t{per_thread<scalar_t, kVec>()} * kWideThreads);
}

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

// Element k of a pack, in the op-math type. bfloat16 is the upper half of a float: each element is
// taken from the 32-bit word holding two of them with one shift or mask. (Its own conversion, cvt.f32.bf16,
// takes a 16-bit register: every element was first moved to a register of its own, which doubled the
// registers a row takes and made the two-input kernels spill.)
template <typename scalar_t, int kVec>
__device__ __forceinline__ opmath::opmath_type<scalar_t> widen(const Pack<scalar_t, kVec>& pack, int k) {
  if constexpr (std::is_same_v<scalar_t, torch::headeronly::BFloat16> && kVec % 2 == 0) {
    uint32_t word;
    memcpy(&word, &pack.v[k & ~1], sizeof(word));
    return __uint_as_float((k & 1) ? (word & 0xffff0000u) : (word << 16));
  } else {
    return static_cast<opmath::opmath_type<scalar_t>>(pack.v[k]);
  }
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
// At most 64 registers per thread (two blocks of kMaxThreads per SM, or one of kWideThreads), so that
// enough warps are resident. kBlockThreads: the largest block the kernel is launched with.
// kThreads: the threads per row when the launch fixes it at compile time (kMaxThreads or kWideThreads,
// the longest rows of float32/float64), else 0 (blockDim.x). With it every access of a row is one pointer plus a
// constant offset; with blockDim.x known only at run time the compiler kept an address per pack and
// spilled registers at the 64-register cap: LayerNorm at rows of 16384 float32 ran at 76% of a
// copy's bandwidth with 458,752 local-memory requests per launch (ncu), 98% with it.
template <typename scalar_t, int kVec, int kPerThread, int kThreads, int kBlockThreads>
__global__ void __launch_bounds__(kBlockThreads, kWideThreads / kBlockThreads)
layernorm_rows_kernel(const scalar_t* __restrict__ x, const scalar_t* __restrict__ w, const scalar_t* __restrict__ b, scalar_t* __restrict__ out, int64_t rows, int64_t cols) {
  using acc_t = opmath::opmath_type<scalar_t>;
  constexpr int kPacks = kPerThread / kVec;
  // One slot per warp and reduction (kBlockThreads / kWarp warps per block, whatever the shape).
  __shared__ acc_t scratch[kReductions][kBlockThreads / kWarp];
  const int threads = kThreads > 0 ? kThreads : static_cast<int>(blockDim.x);
  const int64_t row = static_cast<int64_t>(blockIdx.x) * blockDim.y + threadIdx.y;
  // A block's last rows may lie past the end: their threads load and store nothing but still take
  // part in every barrier of the block. Column offsets fit an int: cols <= kMaxRegisterCols here.
  const int limit = row < rows ? static_cast<int>(cols) : 0;
  const int64_t base = row * cols;
  const int first = static_cast<int>(threadIdx.x) * kVec;

  // ---- load the row: all loads first, so that they are in flight together ----
  // The packs are kept as loaded (a float16 or bfloat16 register holds two elements) and widened to
  // acc_t at each use: a row of two inputs in acc_t took every register the kernel has and spilled.
  Pack<scalar_t, kVec> x_v[kPacks];
#pragma unroll
  for (int p = 0; p < kPacks; ++p) {
    const int col = p * threads * kVec + first;
    x_v[p] = Pack<scalar_t, kVec>{};
    if (col < limit) {
      x_v[p] = load<scalar_t, kVec>(x + base + col);
    }
  }

  acc_t _r[kReductions];
  // ---- _r[0] = mean(x) ----
  {
    acc_t acc = Reduce0<acc_t>::identity();
#pragma unroll
    for (int p = 0; p < kPacks; ++p) {
      const int col = p * threads * kVec + first;
      if (col < limit) {
#pragma unroll
        for (int k = 0; k < kVec; ++k) {
          const acc_t value = layernorm_reduce0_arg<acc_t>(
              widen(x_v[p], k), acc_t(0), acc_t(0), _r);
          acc = Reduce0<acc_t>::combine(acc, value);
        }
      }
    }
    _r[0] = row_reduce<Reduce0<acc_t>>(acc, scratch[0], threads);
    if constexpr (kMean0) {
      _r[0] /= static_cast<acc_t>(cols);
    }
  }
  // ---- _r[1] = mean((x - mean(x)) ** 2.0) ----
  {
    acc_t acc = Reduce1<acc_t>::identity();
#pragma unroll
    for (int p = 0; p < kPacks; ++p) {
      const int col = p * threads * kVec + first;
      if (col < limit) {
#pragma unroll
        for (int k = 0; k < kVec; ++k) {
          const acc_t value = layernorm_reduce1_arg<acc_t>(
              widen(x_v[p], k), acc_t(0), acc_t(0), _r);
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
      const Pack<scalar_t, kVec> w_p = load<scalar_t, kVec>(w + col);
      const Pack<scalar_t, kVec> b_p = load<scalar_t, kVec>(b + col);
      Pack<scalar_t, kVec> result;
#pragma unroll
      for (int k = 0; k < kVec; ++k) {
        result.v[k] = static_cast<scalar_t>(layernorm_out<acc_t>(
            widen(x_v[p], k), widen(w_p, k), widen(b_p, k), _r));
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
layernorm_long_rows_kernel(const scalar_t* __restrict__ x, const scalar_t* __restrict__ w, const scalar_t* __restrict__ b, scalar_t* __restrict__ out, int64_t cols) {
  using acc_t = opmath::opmath_type<scalar_t>;
  __shared__ acc_t scratch[kReductions][kMaxThreads / kWarp];
  const int64_t base = static_cast<int64_t>(blockIdx.x) * cols;
  const int64_t stride = static_cast<int64_t>(blockDim.x) * kVec;
  acc_t _r[kReductions];
  // ---- _r[0] = mean(x) ----
  {
    acc_t acc = Reduce0<acc_t>::identity();
    for (int64_t col = static_cast<int64_t>(threadIdx.x) * kVec; col < cols; col += stride) {
      const Pack<scalar_t, kVec> x_p = load<scalar_t, kVec>(x + base + col);
#pragma unroll
      for (int k = 0; k < kVec; ++k) {
        acc = Reduce0<acc_t>::combine(acc, layernorm_reduce0_arg<acc_t>(
            widen(x_p, k), acc_t(0), acc_t(0), _r));
      }
    }
    _r[0] = row_reduce<Reduce0<acc_t>>(acc, scratch[0], kMaxThreads);
    if constexpr (kMean0) {
      _r[0] /= static_cast<acc_t>(cols);
    }
  }
  // ---- _r[1] = mean((x - mean(x)) ** 2.0) ----
  {
    acc_t acc = Reduce1<acc_t>::identity();
    for (int64_t col = static_cast<int64_t>(threadIdx.x) * kVec; col < cols; col += stride) {
      const Pack<scalar_t, kVec> x_p = load<scalar_t, kVec>(x + base + col);
#pragma unroll
      for (int k = 0; k < kVec; ++k) {
        acc = Reduce1<acc_t>::combine(acc, layernorm_reduce1_arg<acc_t>(
            widen(x_p, k), acc_t(0), acc_t(0), _r));
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
    const Pack<scalar_t, kVec> w_p = load<scalar_t, kVec>(w + col);
    const Pack<scalar_t, kVec> b_p = load<scalar_t, kVec>(b + col);
    Pack<scalar_t, kVec> result;
#pragma unroll
    for (int k = 0; k < kVec; ++k) {
      result.v[k] = static_cast<scalar_t>(layernorm_out<acc_t>(
          widen(x_p, k), widen(w_p, k), widen(b_p, k), _r));
    }
    *reinterpret_cast<Pack<scalar_t, kVec>*>(out + base + col) = result;
  }
}

bool is_aligned(const void* ptr) {
  return reinterpret_cast<std::uintptr_t>(ptr) % kVectorBytes == 0;
}

// Rows of up to kMaxCols elements (at most kPerThread * kWideThreads), held in registers.
template <typename scalar_t, int kVec, int kPerThread, int64_t kMaxCols>
void launch_register_rows(const scalar_t* __restrict__ x, const scalar_t* __restrict__ w, const scalar_t* __restrict__ b, scalar_t* __restrict__ out, int64_t rows, int64_t cols, cudaStream_t stream) {
  // Threads per row: a power of two from one warp to kMaxThreads, enough for kPerThread elements each;
  // kWideThreads where kMaxThreads are not enough (per_thread() below kLongPerThread, rows past
  // kPerThread * kMaxThreads).
  // At kMaxThreads and kWideThreads, float32/float64 take the kernel with the thread count fixed at
  // compile time. The 2-byte types do not: their kernels do not spill without it, and with it the
  // bfloat16 softmax at rows of 16384 runs at 76% of a copy's bandwidth against 97% (same instruction
  // count and occupancy, more stalls per instruction in ncu).
  constexpr bool kFixedThreads = sizeof(scalar_t) > 2;
  constexpr bool kWide = int64_t{kPerThread} * kMaxThreads < kMaxCols;  // may need kWideThreads
  int threads = kWarp;
  while (threads < (kWide ? kWideThreads : kMaxThreads) && int64_t{threads} * kPerThread < cols) {
    threads *= 2;
  }
  const int rows_per_block = std::max(1, kRowBlockThreads / threads);
  const dim3 block(threads, rows_per_block);
  const int64_t max_rows = kMaxBlocks * rows_per_block;
  for (int64_t start = 0; start < rows; start += max_rows) {
    const int64_t count = std::min(rows - start, max_rows);
    const int64_t offset = start * cols;
    const auto blocks = static_cast<unsigned int>((count + rows_per_block - 1) / rows_per_block);
    if constexpr (kWide) {
      if (threads == kWideThreads) {
        layernorm_rows_kernel<scalar_t, kVec, kPerThread, kFixedThreads ? kWideThreads : 0, kWideThreads><<<blocks, block, 0, stream>>>(
            x + offset, w, b, out + offset, count, cols);
        // Kernel launches are asynchronous: a bad launch configuration is only reported by the next
        // CUDA call, far from its cause, unless it is checked right here.
        STD_CUDA_KERNEL_LAUNCH_CHECK();
        continue;
      }
    }
    if (kFixedThreads && threads == kMaxThreads) {
      layernorm_rows_kernel<scalar_t, kVec, kPerThread, kFixedThreads ? kMaxThreads : 0, kMaxThreads><<<blocks, block, 0, stream>>>(
          x + offset, w, b, out + offset, count, cols);
    } else {
      layernorm_rows_kernel<scalar_t, kVec, kPerThread, 0, kMaxThreads><<<blocks, block, 0, stream>>>(
          x + offset, w, b, out + offset, count, cols);
    }
    STD_CUDA_KERNEL_LAUNCH_CHECK();  // as above
  }
}

template <typename scalar_t, int kVec>
void launch_rows(const scalar_t* __restrict__ x, const scalar_t* __restrict__ w, const scalar_t* __restrict__ b, scalar_t* __restrict__ out, int64_t rows, int64_t cols, cudaStream_t stream) {
  if (cols > max_register_cols<scalar_t, kVec>()) {
    // One block per row; a grid of more than kMaxBlocks rows is split into several launches.
    for (int64_t start = 0; start < rows; start += kMaxBlocks) {
      const int64_t count = std::min(rows - start, kMaxBlocks);
      const int64_t offset = start * cols;
      layernorm_long_rows_kernel<scalar_t, kVec><<<static_cast<unsigned int>(count), kMaxThreads, 0, stream>>>(
          x + offset, w, b, out + offset, cols);
      STD_CUDA_KERNEL_LAUNCH_CHECK();  // as in launch_register_rows
    }
    return;
  }
  // kShortPerThread elements per thread for float32/float64 rows of up to kMaxShortCols elements (or
  // per_thread(), when fewer fit); per_thread() for the 2-byte types, and for longer rows.
  constexpr int kLong = per_thread<scalar_t, kVec>();
  if constexpr (sizeof(scalar_t) > 2 && kLong > kShortPerThread) {
    if (cols <= kMaxShortCols) {
      launch_register_rows<scalar_t, kVec, kShortPerThread, kMaxShortCols>(x, w, b, out, rows, cols, stream);
      return;
    }
  }
  launch_register_rows<scalar_t, kVec, kLong, max_register_cols<scalar_t, kVec>()>(x, w, b, out, rows, cols, stream);
}

}  // namespace

template <typename scalar_t>
void launch_layernorm(const scalar_t* x, const scalar_t* w, const scalar_t* b, scalar_t* out, int64_t rows, int64_t cols,
                     cudaStream_t stream) {
  constexpr int kVec = kVectorBytes / sizeof(scalar_t);
  // Every row starts 16-byte aligned when the row length is a multiple of the vector and the
  // pointers are aligned (a view such as x[1:] starts one element into its storage: it is not).
  if (cols % kVec == 0 && is_aligned(x) && is_aligned(w) && is_aligned(b) && is_aligned(out)) {
    launch_rows<scalar_t, kVec>(x, w, b, out, rows, cols, stream);
  } else {
    launch_rows<scalar_t, 1>(x, w, b, out, rows, cols, stream);
  }
}

// One instantiation per supported dtype; layernorm_cuda.cpp calls them from its dtype dispatch.
template void launch_layernorm<float>(const float*, const float*, const float*, float*, int64_t, int64_t, cudaStream_t);
template void launch_layernorm<double>(const double*, const double*, const double*, double*, int64_t, int64_t, cudaStream_t);
template void launch_layernorm<torch::headeronly::Half>(const torch::headeronly::Half*, const torch::headeronly::Half*, const torch::headeronly::Half*, torch::headeronly::Half*, int64_t, int64_t, cudaStream_t);
template void launch_layernorm<torch::headeronly::BFloat16>(const torch::headeronly::BFloat16*, const torch::headeronly::BFloat16*, const torch::headeronly::BFloat16*, torch::headeronly::BFloat16*, int64_t, int64_t, cudaStream_t);

}  // namespace layernorm
