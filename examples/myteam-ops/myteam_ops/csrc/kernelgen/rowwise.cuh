#pragma once
// kernelgen/rowwise.cuh: the machinery every rowwise op of this package shares: the kernels, their
// launch, and the rules that pick the launch shape. An op's own file (csrc/<op>/cuda/<op>_kernel.cu)
// holds only what is particular to it: an `Op` struct that names its formula's steps, and one
// instantiation per dtype.
//
// A rowwise op reads each row, reduces it one or more times and writes a row of the same length. Like
// an elementwise op it does a few flops per byte and is limited by memory bandwidth, so the kernels
// are built to read every element from HBM once and write it once:
//   * Rows of up to kMaxRegisterCols elements (16384) are held in registers (rows_kernel): each thread
//     loads a fixed number of elements of every input, all loads issued before any math, and every
//     reduction and the output then run on those registers. The row stays in the inputs' own type
//     (two float16 or bfloat16 elements per register) and is widened where it is used. How many
//     elements one thread holds follows from how many row-sized values the kernel keeps (per_thread):
//     one warp per row for short rows (four rows per block), up to 16 warps per row above, 32 when the
//     row's values fill a thread's registers at 16 warps. Where ptxas could not fit a build's formula
//     beside the row and spilled registers to local memory, the launch takes a narrow build, the row in
//     half the registers (Launch::takes_narrow, GradLaunch::takes_narrow).
//   * Longer rows are held in the registers of a thread-block cluster (cluster_rows_kernel, on sm_90
//     and later): up to kMaxClusterBlocks blocks of kMaxThreads threads share one row, each holding a
//     slice of it as the register kernel holds a whole row. Each reduction is reduced in each block,
//     then across the cluster: every block puts its value in its shared memory, and after a cluster
//     barrier every thread reads all the blocks' values through distributed shared memory and folds
//     them in rank order. A maximum and a sum of exp(f - max(f)) (softmax, logsumexp), or a mean and a
//     sum of squared deviations from it (LayerNorm), complete in one such exchange instead of two: each
//     block sums about its own maximum or mean, and the exchange corrects the sums (Op::kOnline). So the
//     row is still read from HBM once and written once, at any length up to
//     kMaxClusterBlocks * kMaxThreads * per_thread() (262144 elements of one float32 input or two
//     bfloat16 ones, 524288 of one bfloat16 input). A thread holds up to 128 bytes of each input
//     (cluster_start), twice the register kernel's 2-byte share: the fewer blocks a row takes, the less
//     of their waiting at each reduction is paid per byte.
//   * Rows longer still, or on GPUs without clusters, take a multi-pass kernel (long_rows_kernel): one
//     block per row, each reduction a loop over the row (re-read from memory, which the L2 cache partly
//     absorbs), then the output loop.
//   * 16-byte loads and stores (4 float32 or 8 float16/bfloat16 elements) when every row starts
//     16-byte aligned: the row length is a multiple of the vector and every pointer is aligned.
//     Otherwise, one element per access.
//   * Reductions run in the op's math type (float for the half types, double for float64): each
//     thread folds its own elements in order, then a butterfly of warp shuffles, and for rows of
//     several warps a second butterfly over the warps' results (row_reduce). The order never changes
//     from run to run, so the results are bitwise reproducible.
//   * int64 row offsets: rows * cols may pass 2^31.
//
// An op is a struct (in csrc/<op>/<op>.h, shared with the CPU loop, kernelgen/rowwise_cpu.h) with
//   kInputs, kWeights, kReductions   its columns are the inputs (one row each), then the weights (one
//                                    value per column, the same for every row);
//   math_t<scalar_t>                 the type its formula and reductions compute in;
//   Reduce<R, acc_t>, kMean[R]       reduction R's fold (identity(), combine(a, b)), and whether it
//                                    divides by the row length;
//   kReads[R][column]                the columns step R reads (R == kReductions: the output); a
//                                    weight no step reads is never loaded;
//   kKept                            the reduction whose per-element argument the output reuses, or -1;
//   kShared                          its shared terms: per-element values several steps read (0: none);
//                                    with some, kSharedReads[k][column] (the columns term k reads),
//                                    kUses[step][k] (the steps that read it) and share(v), which puts
//                                    every term at one element in v[kColumns + k];
//   arg<R>(v, r), out(v, kept, r)    the formula's steps: v holds the columns' values at one element
//                                    (0 where the step reads none), then the shared terms', r the
//                                    reductions so far;
//   kFastMath                        whether the 2-byte types evaluate the formula in fast_float;
// and, the forward's Op only,
//   kMathCost                        the formula's arithmetic at one element (cluster_start).
// Everything here is in an anonymous namespace: each op's kernel file compiles its own copy, as if
// written there.

#include <cooperative_groups.h>
#include <cuda_runtime.h>
// STD_CUDA_CHECK, STD_CUDA_KERNEL_LAUNCH_CHECK: C10_CUDA_CHECK's stable twins (the same messages,
// device-side assert hints included); they need -DUSE_CUDA, which _build.py sets.
#include <torch/csrc/stable/macros.h>
#include <torch/headeronly/util/BFloat16.h>
#include <torch/headeronly/util/Half.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>
#include <utility>

#include "../opmath.h"
#include "per_device.cuh"

namespace kg {
namespace rowwise {
namespace {

constexpr int kWarp = 32;
constexpr int kVectorBytes = 16;  // the widest load one thread can issue
// Elements of each input one thread holds in registers: kShortPerThread (4 16-byte packs of float32,
// 2 of the half types) for rows of up to kShortPerThread * kMaxThreads = 8192 elements, with as many
// threads as that takes; kLongPerThread at kMaxThreads threads for rows of up to 16384. On an H100 at
// 2^26 elements, 32 elements per thread everywhere runs LayerNorm float32 at 76-89% of a copy's
// bandwidth (it spills registers); 16 everywhere, at up to 1024 threads, loses at 16384 (60% in
// float16). Fewer elements per thread mean more threads per row to hide each load's and each
// reduction's latency, up to where the block's barriers cost more.
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
// Threads per block for short rows: 4 one-warp rows per block.
constexpr int kRowBlockThreads = 128;
// The hardware limit on gridDim.x; a launch covers at most this many blocks.
constexpr int64_t kMaxBlocks = 2147483647;
// The most blocks of a thread-block cluster that share one long row (cluster_rows_kernel). 8 is the
// portable cluster size; an H100 runs clusters of 16 once a kernel opts in, and with two 512-thread
// blocks per SM a cluster of 16 takes 8 SMs of one GPC. Launch asks the occupancy API whether the
// device can run the cluster at all before it takes this kernel.
constexpr int kMaxClusterBlocks = 16;
// The deep build of cluster_rows_kernel (launch_cluster_rows), for rows that would take more than
// kPortableClusterBlocks blocks: each thread starts from kClusterBytes of each input (32 float32
// elements, 64 of the 2-byte types) where the formula is light, and per_thread() halves that while the
// row's values take more than kRowRegisters.
//   * Why: a cluster kernel's blocks load their slices, wait for each other at every reduction, then
//     store, and a cluster of more than 8 blocks (16: the most an H100 runs) waits longest and fits a
//     GPC's SMs worst. On an H100, at 2^26 bfloat16 elements in rows of 262144, light single-input
//     expressions run 1.03-1.51x faster in clusters of 8 blocks of 64 elements a thread than in 16 blocks
//     of 32 (median 1.24x; softmax 61% -> 73% of a copy's bandwidth, RMSNorm 75% -> 85%), or within 1.5%.
//     At rows of 65536 (2 blocks against 4) the deep build wins and loses up to 20%, so rows that fit 8
//     blocks keep kLongPerThread.
//   * Why not for a heavy formula: every element's arithmetic is unrolled, so a thread's code grows with
//     the elements it holds, and Op::kMathCost * elements above kClusterCode outgrows the SM's
//     instruction cache: expressions with sin or cos (costs 96 and 102) run 1.2-2.1x slower at 64
//     elements a thread (9000 instructions) than at 32 (4600).
constexpr int kPortableClusterBlocks = 8;
constexpr int kClusterBytes = 128;
constexpr int kClusterCode = 80 * 64;  // light: a cost of at most 80 at 64 elements a thread
template <class Op, typename scalar_t>
constexpr int cluster_start() {
  const int deep = std::max(kLongPerThread, kClusterBytes / static_cast<int>(sizeof(scalar_t)));
  return Op::kMathCost * deep <= kClusterCode ? deep : kLongPerThread;
}

// Registers one thread's share of the row takes at `per_thread` elements of every input: each input,
// in its own type, or the reduction argument the output reuses (in the math type), which replaces
// them: the output then reads no input, so the inputs' registers are free once it is computed; and
// each shared term, in the math type, kept from the first step to the last that reads it, beside the
// inputs the steps read directly. Loaded one by one (kVec 1), a 2-byte element takes a register of its
// own. kKeep false: the output computes the kept argument again from the held row (held_row), which
// then takes no registers of its own.
// An op whose terms have levels (a backward's, opmath::SharedLevels) is counted step by step instead: at step
// S, the inputs that step S or a later one reads directly, or that a term not computed yet reads, and the
// terms computed by then that step S or a later one reads (or a later term may). An input's registers are
// free once no step and no term reads it again: a softmax's backward holds exp(x - max(x)) from its second
// step on, in the registers x held until then.
template <class Op>
constexpr int leveled_registers(int input_registers, int term_registers) {
  using Levels = opmath::SharedLevels<Op>;
  int peak = Op::kInputs * input_registers;  // the row as loaded
  for (int step = 0; step <= Op::kReductions; ++step) {
    int live = 0;
    for (int c = 0; c < Op::kInputs; ++c) {
      bool read = false;
      for (int later = step; later <= Op::kReductions; ++later) {
        read = read || Op::kReads[later][c];
      }
      for (int k = 0; k < Op::kShared; ++k) {
        read = read || (Levels::of(k) > step && Op::kSharedReads[k][c]);
      }
      live += read ? input_registers : 0;
    }
    for (int k = 0; k < Op::kShared; ++k) {
      bool read = false;
      for (int later = step; later <= Op::kReductions; ++later) {
        read = read || Op::kUses[later][k];
      }
      for (int j = k + 1; j < Op::kShared; ++j) {
        read = read || Levels::of(j) > step;
      }
      live += Levels::of(k) <= step && read ? term_registers : 0;
    }
    peak = std::max(peak, live);
  }
  return peak;
}

template <class Op, typename scalar_t, int kVec, bool kKeep = true>
constexpr int row_registers(int per_thread) {
  const int bytes = kVec > 1 ? static_cast<int>(sizeof(scalar_t)) : std::max(4, static_cast<int>(sizeof(scalar_t)));
  const int inputs = Op::kInputs * per_thread * bytes / 4;
  const int acc_registers = per_thread * static_cast<int>(sizeof(typename Op::template math_t<scalar_t>)) / 4;
  const int kept = kKeep && Op::kKept >= 0 ? acc_registers : 0;
  if constexpr (opmath::SharedLevels<Op>::kCount > 1) {
    return std::max(kept, leveled_registers<Op>(per_thread * bytes / 4, acc_registers));
  } else if constexpr (Op::kShared == 0) {
    return std::max(inputs, kept);
  } else {
    // The shared terms are computed from the loaded row first; from then on only the inputs a step
    // reads directly stay live beside them.
    int direct = 0;
    for (int c = 0; c < Op::kInputs; ++c) {
      for (int step = 0; step <= Op::kReductions; ++step) {
        if (Op::kReads[step][c]) {
          ++direct;
          break;
        }
      }
    }
    const int terms = Op::kShared * acc_registers;
    return std::max({inputs, kept + terms, direct * per_thread * bytes / 4 + terms});
  }
}

// Elements of each input one thread holds (for float32/float64, in rows longer than kMaxShortCols):
// kLongPerThread, halved while the row's values would take more than kRowRegisters, down to one pack.
// A spilled row costs far more than the extra threads: the two-input RMSNorm in bfloat16 runs at 32%
// of a copy's bandwidth when it spills.
// (kBudget: the registers the row may take; the backward with weights, at up to 128 registers a thread,
// allows twice kRowRegisters.)
// (kStart: the count to start from, kKeep as in row_registers; the deep cluster build starts from
// cluster_start().)
template <class Op, typename scalar_t, int kVec, int kBudget = kRowRegisters, int kStart = kLongPerThread, bool kKeep = true>
constexpr int per_thread() {
  int count = kStart;
  while (count > kVec && row_registers<Op, scalar_t, kVec, kKeep>(count) > kBudget) {
    count /= 2;
  }
  return count;
}

// The longest row the register kernel takes for this type: kMaxRegisterCols, or fewer when the
// row's values do not fit kWideThreads threads (4 float32 inputs: 8 per thread, 8192).
template <class Op, typename scalar_t, int kVec, int kBudget = kRowRegisters>
constexpr int64_t max_register_cols() {
  return std::min(kMaxRegisterCols, int64_t{per_thread<Op, scalar_t, kVec, kBudget>()} * kWideThreads);
}

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
// taken from the 32-bit word holding two of them with one shift or mask. (Its own conversion,
// cvt.f32.bf16, takes a 16-bit register: every element would first move to a register of its own,
// which doubles the registers a row takes and makes the two-input kernels spill.)
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
// and folds them with a second butterfly (every thread folding all the warps' results one after
// another, 16 dependent shared-memory loads for a 512-thread row, runs LayerNorm at rows of 16384 2%
// slower in float16/bfloat16). The tree never changes, so the results are bitwise reproducible, and
// every thread of the row gets the same value.
// Folds `value` over the 32 lanes of a warp with a butterfly of shuffles (a tree of fixed shape). The
// butterfly leaves the same value in every lane, except that max(+0, -0) depends on the operands' order:
// every lane takes lane 0's, so that every thread works with one value.
template <typename Reduce, typename acc_t>
__device__ __forceinline__ acc_t warp_fold(acc_t value) {
#pragma unroll
  for (int offset = kWarp / 2; offset > 0; offset /= 2) {
    value = Reduce::combine(value, __shfl_xor_sync(0xffffffffu, value, offset));
  }
  return __shfl_sync(0xffffffffu, value, 0);
}

template <typename Reduce, typename acc_t>
__device__ __forceinline__ acc_t row_reduce(acc_t value, acc_t* scratch, int threads) {
  value = warp_fold<Reduce>(value);
  const int warps = threads / kWarp;
  if (warps > 1) {  // the same for the whole block: no thread skips the barrier
    acc_t* mine = scratch + threadIdx.y * warps;
    const int lane = threadIdx.x % kWarp;
    if (lane == 0) {
      mine[threadIdx.x / kWarp] = value;
    }
    __syncthreads();
    value = lane < warps ? mine[lane] : Reduce::identity();
    for (int offset = warps / 2; offset > 0; offset /= 2) {
      value = Reduce::combine(value, __shfl_xor_sync(0xffffffffu, value, offset));
    }
    value = __shfl_sync(0xffffffffu, value, 0);
  }
  return value;
}

// The columns each block of a cluster holds (cluster_rows_kernel): the row split evenly over `blocks`, each
// slice a multiple of `vec` elements (16-byte aligned where the row is); the last slices may be shorter.
// The launch splits the row with it, and InCluster::reduce_pair counts each slice's elements with it.
__host__ __device__ constexpr int64_t cluster_chunk(int64_t cols, int64_t blocks, int vec) {
  return ((cols + blocks - 1) / blocks + vec - 1) / vec * vec;
}

// What follows a row_reduce: nothing when a block holds the whole row (InBlock) ...
struct InBlock {
  static constexpr bool kCluster = false;
  template <typename Reduce, typename acc_t>
  static __device__ __forceinline__ acc_t reduce(acc_t value, acc_t* /*slot*/) {
    return value;
  }
  // (reduce in three steps, for several reductions completed with one barrier: Steps::reduce_held_pass)
  template <typename acc_t>
  static __device__ __forceinline__ void publish(acc_t /*value*/, acc_t* /*slot*/) {}
  static __device__ __forceinline__ void sync() {}
  template <typename Reduce, typename acc_t>
  static __device__ __forceinline__ acc_t collect(acc_t value, const acc_t* /*slot*/) {
    return value;
  }
  static __device__ __forceinline__ void reduced() {}
};

// ... and, when the blocks of a thread-block cluster share the row (cluster_rows_kernel), the reduction
// of the blocks' values: block 0 of the cluster's values, then block 1's, ... Every block's thread 0
// writes the block's value to `slot` in its own shared memory; the cluster barrier makes the writes
// visible to the whole cluster (release, then acquire); lane k of every warp then reads block k's slot
// through distributed shared memory, and a butterfly of shuffles folds them. Every thread of every block
// folds the same values in the same tree, so the whole cluster gets one value, bitwise. Each reduction
// has its own slot, so no slot is written again while another block may still read it.
struct InCluster {
  static constexpr bool kCluster = true;
  template <typename Reduce, typename acc_t>
  static __device__ __forceinline__ acc_t reduce(acc_t value, acc_t* slot) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    namespace cg = cooperative_groups;
    const cg::cluster_group cluster = cg::this_cluster();
    if (threadIdx.x == 0 && threadIdx.y == 0) {
      *slot = value;
    }
    cluster.sync();
    const int lane = threadIdx.x % kWarp;
    value = lane < static_cast<int>(cluster.num_blocks()) ? *cluster.map_shared_rank(slot, lane) : Reduce::identity();
    value = warp_fold<Reduce>(value);
#endif
    return value;
  }
  // reduce in three steps, so that several reductions wait at one cluster barrier (Steps::reduce_held_pass):
  // every reduction's block value to its slot, the barrier, then each folded from every block's slot.
  template <typename acc_t>
  static __device__ __forceinline__ void publish(acc_t value, acc_t* slot) {
    if (threadIdx.x == 0 && threadIdx.y == 0) {
      *slot = value;
    }
  }
  static __device__ __forceinline__ void sync() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    cooperative_groups::this_cluster().sync();
#endif
  }
  template <typename Reduce, typename acc_t>
  static __device__ __forceinline__ acc_t collect(acc_t value, acc_t* slot) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    namespace cg = cooperative_groups;
    const cg::cluster_group cluster = cg::this_cluster();
    const int lane = threadIdx.x % kWarp;
    value = lane < static_cast<int>(cluster.num_blocks()) ? *cluster.map_shared_rank(slot, lane) : Reduce::identity();
    value = warp_fold<Reduce>(value);
#endif
    return value;
  }
  // Two reductions completed in one exchange (Op::kOnline, below): reduction J's block value (the
  // caller has put it in slots[0]) and reduction S's block value `value`, which the block computed with
  // its own value of J in place of the row's. Block k's pair is read by lane k as in reduce (for
  // kCentered, its element count is computed with cluster_chunk, as the launch splits the row); J's row
  // value is folded as reduce folds it, then each block's S value is brought to that row value and the
  // results are summed, in one tree, so the whole cluster gets the same bits. For the two forms (see
  // kOnline):
  //   * exp (J a max, S a sum of exp(f - _r[J]) * h): block k's sum is multiplied by exp(m_k - M), M the
  //     row's maximum, and by 1 where the block holds only -inf (it added 0 * h, as the exact sum does);
  //     a row whose maximum is -inf sums exp(-inf - (-inf)) = NaN exactly, so its scale is NaN.
  //   * centered (J a mean of f, S a sum of (f - _r[J])^2; J's block value is its sum, not yet divided):
  //     block k's sum of squares around its own mean c_k = sum_k / n_k, plus n_k (c_k - mean)^2 (Chan's
  //     combination of partial variances: exact algebra, and no cancellation between large sums).
  // Returns J's row value (a sum, for centered); `value` becomes S's, `scale` this block's exp factor.
  template <class ReduceJ, bool kCentered, int kVec, typename acc_t>
  static __device__ __forceinline__ acc_t reduce_pair(acc_t& value, acc_t& scale, int64_t cols, acc_t* slots) {
    acc_t row = value;
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    namespace cg = cooperative_groups;
    const cg::cluster_group cluster = cg::this_cluster();
    if (threadIdx.x == 0 && threadIdx.y == 0) {
      slots[1] = value;
    }
    cluster.sync();
    const int lane = threadIdx.x % kWarp;
    const bool block = lane < static_cast<int>(cluster.num_blocks());
    const acc_t* const theirs_at = cluster.map_shared_rank(slots, block ? lane : 0);
    const acc_t theirs = block ? theirs_at[0] : ReduceJ::identity();
    row = warp_fold<ReduceJ>(theirs);
    // (S's block values are read after J's fold: fewer values live across it, as in reduce.)
    const acc_t part = block ? theirs_at[1] : acc_t(0);
    acc_t term;
    if constexpr (kCentered) {
      // (Computed rather than read: a third value read from every block costs a cluster of 16 blocks
      // about 7% on an H100.)
      const int64_t chunk = cluster_chunk(cols, cluster.num_blocks(), kVec);
      const int64_t left = cols - lane * chunk;
      const acc_t n = static_cast<acc_t>(!block || left <= 0 ? 0 : (left < chunk ? left : chunk));
      const acc_t mean = row / static_cast<acc_t>(cols);
      term = n > acc_t(0) ? part + n * opmath::square(theirs / n - mean) : acc_t(0);
      scale = acc_t(1);
    } else {
      term = part * exp_scale(theirs, row);
      scale = exp_scale(slots[0], row);
    }
    value = warp_fold<opmath::SumOp<acc_t>>(term);
#endif
    return row;
  }
  // What a block's sum of exp(f - m) * h, m its own maximum, is multiplied by to be the sum at the row's
  // maximum `row` (reduce_pair).
  template <typename acc_t>
  static __device__ __forceinline__ acc_t exp_scale(acc_t m, acc_t row) {
    const acc_t minus_inf = opmath::MaxOp<acc_t>::identity();
    if (row == minus_inf) {
      return minus_inf - minus_inf;  // NaN, as exp(-inf - (-inf))
    }
    return m == minus_inf ? acc_t(1) : opmath::exp(m - row);
  }
  // After the last reduction: this block reads no other block's slot any more. It says so (a cluster
  // barrier's arrival) and goes on; it waits for the other blocks' arrivals only before it exits
  // (cluster_rows_kernel), so that its own slots outlive their reads without a barrier in between.
  static __device__ __forceinline__ void reduced() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    cooperative_groups::this_cluster().barrier_arrive();
#endif
  }
};

template <std::size_t, typename T>
using Same = T;

// An op's pairs of reductions that a cluster completes in one exchange (Op::kOnline[S] = J, and
// Op::kCentered[S]: csrc/<op>/<op>.h says when kernelgen writes them). An Op without them has none.
template <class Op, class = void>
struct Pairs {
  static __host__ __device__ constexpr int with(int) { return -1; }
  static __host__ __device__ constexpr bool centered(int) { return false; }
};
template <class Op>
struct Pairs<Op, std::void_t<decltype(Op::kOnline[0]), decltype(Op::kCentered[0])>> {
  static __host__ __device__ constexpr int with(int s) { return Op::kOnline[s]; }
  static __host__ __device__ constexpr bool centered(int s) { return Op::kCentered[s]; }
};
// Whether reduction s completes with an earlier maximum in a cluster (an online sum: the block's sum, and
// arguments the output keeps from it, are at the block's own maximum until the exchange rescales them).
template <class Op>
__host__ __device__ constexpr bool online_pair(int s) {
  return s >= 0 && Pairs<Op>::with(s) >= 0 && !Pairs<Op>::centered(s);
}
// Whether a later reduction completes together with reduction j (j's row value waits for it).
template <class Op>
__host__ __device__ constexpr bool paired_later(int j) {
  for (int s = j + 1; s < Op::kReductions; ++s) {
    if (Pairs<Op>::with(s) == j) {
      return true;
    }
  }
  return false;
}

// An op's passes of the multi-pass kernel (Op::kPass[S]: the pass of reduction S, written where two
// reductions share one): the kernel streams the row from memory once a pass and folds every reduction of
// the pass in that one loop. A reduction is in the first pass after those of the reductions it reads, so a
// pass's reductions read nothing of each other. An Op without kPass has a pass for each reduction.
template <class Op, class = void>
struct Passes {
  static __host__ __device__ constexpr int of(int s) { return s; }
};
template <class Op>
struct Passes<Op, std::void_t<decltype(Op::kPass[0])>> {
  static __host__ __device__ constexpr int of(int s) { return Op::kPass[s]; }
};
template <class Op>
__host__ __device__ constexpr int pass_count() {
  int count = 0;
  for (int s = 0; s < Op::kReductions; ++s) {
    count = Passes<Op>::of(s) + 1 > count ? Passes<Op>::of(s) + 1 : count;
  }
  return count;
}

// An op's steps over the columns of one pack (kVec elements of each input's row and of each weight):
// which columns a step reads, getting them, their values at one element, and the reductions.
template <class Op, typename scalar_t, int kVec, class Columns = std::make_index_sequence<Op::kInputs + Op::kWeights>>
struct Steps;

template <class Op, typename scalar_t, int kVec, std::size_t... I>
struct Steps<Op, scalar_t, kVec, std::index_sequence<I...>> {
  using acc_t = typename Op::template math_t<scalar_t>;
  using pack_t = Pack<scalar_t, kVec>;
  static constexpr int kColumns = sizeof...(I);
  static constexpr int kOutput = Op::kReductions;  // the output's row of Op::kReads
  // The register kernel's share steps: the op's shared terms (Op::kShared, csrc/<op>/<op>.h) of level L
  // (opmath::SharedLevels: those that read reductions 0 to L - 1), once per element, before step L;
  // kShare, level 0's, right after the row is loaded. A step's values are the columns', then the shared
  // terms' (v[kColumns + k]).
  using Levels = opmath::SharedLevels<Op>;
  static constexpr int kShare = -1;
  static __host__ __device__ constexpr int share_step(int level) { return -1 - level; }
  static constexpr int kValues = kColumns + Op::kShared;
  static constexpr int kAccs = Op::kReductions > 0 ? Op::kReductions : 1;  // a pass's accumulators, one a reduction

  // The type the op's formula is evaluated in. Where the op allows it (Op::kFastMath), that is
  // opmath::kernel_math_type (../opmath.h): for float16 and bfloat16, opmath::fast_float, whose
  // division and exp run on the GPU's approximate instructions, as the elementwise kernel's and
  // torch.compile's do. Their errors are far below a 16-bit result's rounding, and an expression with
  // several divisions or exps per element is otherwise bound by its arithmetic, not by memory; a
  // backward's derivatives hold more of them than its forward. float32 and float64 evaluate in acc_t
  // itself. The values, the reductions' sums and the per-row values stay in acc_t; only the formula's
  // arithmetic changes type. A backward's mask [f == max(f)] still sees the bits its reduction saw: f is
  // computed in the same type at both places, with exact sums and products (opmath::mul_rn and kin), and
  // approximate division and exp give the same result for the same operands.
  using eval_t = std::conditional_t<Op::kFastMath, opmath::kernel_math_type<scalar_t, acc_t>, acc_t>;
  static constexpr bool kFast = !std::is_same_v<eval_t, acc_t>;

  // Step S's argument (Op::arg), the output (Op::out) and the shared terms (Op::share), in eval_t.
  template <int S>
  static __device__ __forceinline__ acc_t arg(const acc_t (&v)[kValues], const acc_t* r) {
    if constexpr (kFast) {
      eval_t fv[kValues];
      eval_t fr[Op::kReductions];
      to_eval(fv, v, fr, r, S);  // step S reads the reductions before it
      return static_cast<acc_t>(Op::template arg<S>(fv, fr));
    } else {
      return Op::template arg<S>(v, r);
    }
  }
  static __device__ __forceinline__ acc_t out(const acc_t (&v)[kValues], acc_t kept, const acc_t* r) {
    if constexpr (kFast) {
      eval_t fv[kValues];
      eval_t fr[Op::kReductions];
      to_eval(fv, v, fr, r, Op::kReductions);
      return static_cast<acc_t>(Op::template out<eval_t>(fv, eval_t(kept), fr));
    } else {
      return Op::template out<acc_t>(v, kept, r);
    }
  }
  // (The terms of level L > 0 are a backward's: they read reductions 0 to L - 1.)
  template <int L>
  static __device__ __forceinline__ void share(acc_t (&v)[kValues], const acc_t* r) {
    if constexpr (Op::kShared > 0 && L > 0) {
      if constexpr (kFast) {
        eval_t fv[kValues];
        eval_t fr[Op::kReductions];
        to_eval(fv, v, fr, r, L);
        Op::template share_level<L, eval_t>(fv, fr);
        from_eval(v, fv);
      } else {
        Op::template share_level<L, acc_t>(v, r);
      }
    } else if constexpr (Op::kShared > 0) {
      if constexpr (kFast) {
        eval_t fv[kValues];
#pragma unroll
        for (int i = 0; i < kValues; ++i) {
          fv[i] = v[i];
        }
        Op::share(fv);
        from_eval(v, fv);
      } else {
        Op::share(v);
      }
    }
  }
  // A backward's gradients at one element (GradOp::grads): d[j] of column j + 1 (the inputs', then each
  // weight's contribution of this row); r holds the reductions, then the row length.
  template <int kGrads>
  static __device__ __forceinline__ void grads(const acc_t (&v)[kValues], const acc_t* r, acc_t (&d)[kGrads]) {
    if constexpr (kFast) {
      eval_t fv[kValues];
      eval_t fr[Op::kReductions + 1];
      to_eval(fv, v, fr, r, Op::kReductions + 1);
      eval_t fd[kGrads];
      Op::template grads<eval_t>(fv, fr, fd);
#pragma unroll
      for (int j = 0; j < kGrads; ++j) {
        d[j] = static_cast<acc_t>(fd[j]);
      }
    } else {
      Op::template grads<acc_t>(v, r, d);
    }
  }
  // Every term of level S or below: the terms step S may read (the multi-pass kernel computes them where a
  // step reads them; r holds the reductions before step S).
  template <int S, int... L>
  static __device__ __forceinline__ void share_levels(std::integer_sequence<int, L...>, acc_t (&v)[kValues], const acc_t* r) {
    (share_if<S, L>(v, r), ...);
  }
  template <int S, int L>
  static __device__ __forceinline__ void share_if(acc_t (&v)[kValues], const acc_t* r) {
    if constexpr (L <= S) {
      share<L>(v, r);
    }
  }
  template <int S>
  static __device__ __forceinline__ void share_upto(acc_t (&v)[kValues], const acc_t* r) {
    share_levels<S>(std::make_integer_sequence<int, Levels::kCount>{}, v, r);
  }
  // Whether some shared term is of level L.
  static __host__ __device__ constexpr bool has_level(int level) {
    for (int k = 0; k < Op::kShared; ++k) {
      if (Levels::of(k) == level) {
        return true;
      }
    }
    return false;
  }
  // The values and the first `reductions` per-row values in eval_t. (The copies are register renames:
  // eval_t is a float.)
  template <int kRowValues>
  static __device__ __forceinline__ void to_eval(eval_t (&fv)[kValues], const acc_t (&v)[kValues],
                                                 eval_t (&fr)[kRowValues], const acc_t* r, int reductions) {
#pragma unroll
    for (int i = 0; i < kValues; ++i) {
      fv[i] = v[i];
    }
#pragma unroll
    for (int i = 0; i < kRowValues; ++i) {
      if (i < reductions) {
        fr[i] = r[i];
      }
    }
  }
  // The shared terms back from eval_t into v (after a share step).
  static __device__ __forceinline__ void from_eval(acc_t (&v)[kValues], const eval_t (&fv)[kValues]) {
#pragma unroll
    for (int i = kColumns; i < kValues; ++i) {
      v[i] = static_cast<acc_t>(fv[i]);
    }
  }

  // Whether step S reads a shared term that reads column c (a share step, S < 0: whether a term of its
  // level does).
  template <int S>
  static __host__ __device__ constexpr bool shares(int c) {
    if constexpr (Op::kShared > 0) {
      for (int k = 0; k < Op::kShared; ++k) {
        if constexpr (S < 0) {
          if (Levels::of(k) == share_step(S) && Op::kSharedReads[k][c]) {
            return true;
          }
        } else {
          if (Op::kUses[S][k] && Op::kSharedReads[k][c]) {
            return true;
          }
        }
      }
    }
    return false;
  }

  // Whether step S reads column c. kRecompute: the multi-pass kernel (and the CPU loop) computes the
  // shared terms a step reads where it reads them, and its output computes the kept argument again, so
  // a step also reads their columns; the register kernel has them in registers.
  template <int S, bool kRecompute>
  static __host__ __device__ constexpr bool reads(int c) {
    if constexpr (S < 0) {
      return shares<S>(c);
    } else if constexpr (kRecompute && S == kOutput && Op::kKept >= 0) {
      return Op::kReads[S][c] || shares<S>(c) || Op::kReads[Op::kKept][c] || shares<Op::kKept>(c);
    } else if constexpr (kRecompute) {
      return Op::kReads[S][c] || shares<S>(c);
    } else {
      return Op::kReads[S][c];
    }
  }

  // The register kernel loads each input's share of the row once (zeros past the row's end) ...
  template <std::size_t C>
  static __device__ __forceinline__ void clear(pack_t& held) {
    if constexpr (C < Op::kInputs) {
      held = pack_t{};
    }
  }
  template <std::size_t C>
  static __device__ __forceinline__ void hold(pack_t& held, const scalar_t* ptr, int64_t base, int col) {
    if constexpr (C < Op::kInputs) {
      held = load<scalar_t, kVec>(ptr + base + col);
    }
  }
  // Thread `first / kVec`'s packs of a row of `threads` threads, starting at `base` (pack p at column
  // p * threads * kVec + first), all loads issued before any math so that they are in flight together.
  template <int kPacks>
  static __device__ __forceinline__ void hold_row(pack_t (&row)[kColumns][kPacks], int64_t base, int threads, int first,
                                                  int limit, const Same<I, scalar_t>*... in) {
#pragma unroll
    for (int p = 0; p < kPacks; ++p) {
      const int col = p * threads * kVec + first;
      (clear<I>(row[I][p]), ...);
      if (col < limit) {
        (hold<I>(row[I][p], in, base, col), ...);
      }
    }
  }
  // ... and loads the weights' packs where a step reads them.
  template <int S, std::size_t C>
  static __device__ __forceinline__ void load_weight(pack_t& pack, const scalar_t* ptr, int col) {
    if constexpr (C >= Op::kInputs && reads<S, false>(C)) {
      pack = load<scalar_t, kVec>(ptr + col);
    }
  }
  template <int S>
  static __device__ __forceinline__ void load_weights(pack_t (&packs)[kColumns], int col, const Same<I, scalar_t>*... in) {
    (load_weight<S, I>(packs[I], in, col), ...);
  }
  // v = step S's values at element k of pack p: the inputs' from the row held in registers, the
  // weights' from their packs, 0 for the columns the step does not read.
  template <int S, std::size_t C, int kPacks>
  static __device__ __forceinline__ acc_t held_value(const pack_t (&row)[kColumns][kPacks], const pack_t& weight, int p, int k) {
    if constexpr (!reads<S, false>(C)) {
      return acc_t(0);
    } else if constexpr (C < Op::kInputs) {
      return widen(row[C][p], k);
    } else {
      return widen(weight, k);
    }
  }
  template <int S, int kPacks>
  static __device__ __forceinline__ void held_values(acc_t (&v)[kValues], const pack_t (&row)[kColumns][kPacks],
                                                     const pack_t (&weights)[kColumns], int p, int k) {
    ((v[I] = held_value<S, I>(row, weights[I], p, k)), ...);
  }
  // ... and the shared terms step S reads, from the register kernel's `shared` (kPerThread values of each
  // term a thread, laid out [term][element]).
  template <int S, int kPerThread, int T>
  static __device__ __forceinline__ void held_term(acc_t (&v)[kValues], const acc_t* shared, int p, int k) {
    if constexpr (Op::kUses[S][T]) {
      v[kColumns + T] = shared[T * kPerThread + p * kVec + k];
    } else {
      v[kColumns + T] = acc_t(0);
    }
  }
  template <int S, int kPerThread, int... T>
  static __device__ __forceinline__ void held_terms(std::integer_sequence<int, T...>, acc_t (&v)[kValues],
                                                    const acc_t* shared, int p, int k) {
    (held_term<S, kPerThread, T>(v, shared, p, k), ...);
  }
  template <int S, int kPerThread>
  static __device__ __forceinline__ void held_shared(acc_t (&v)[kValues], const acc_t* shared, int p, int k) {
    held_terms<S, kPerThread>(std::make_integer_sequence<int, Op::kShared>{}, v, shared, p, k);
  }

  // The terms of levels below L, for the terms of level L that read them (0 for the others).
  template <int L, int kPerThread, int T>
  static __device__ __forceinline__ void held_lower(acc_t (&v)[kValues], const acc_t* shared, int p, int k) {
    if constexpr (Levels::of(T) < L) {
      v[kColumns + T] = shared[T * kPerThread + p * kVec + k];
    } else {
      v[kColumns + T] = acc_t(0);
    }
  }
  template <int L, int kPerThread, int... T>
  static __device__ __forceinline__ void held_lowers(std::integer_sequence<int, T...>, acc_t (&v)[kValues],
                                                     const acc_t* shared, int p, int k) {
    (held_lower<L, kPerThread, T>(v, shared, p, k), ...);
  }

  // The terms of level L into `shared`.
  template <int L, int kPerThread, int T>
  static __device__ __forceinline__ void keep_term(const acc_t (&v)[kValues], acc_t* shared, int p, int k) {
    if constexpr (Levels::of(T) == L) {
      shared[T * kPerThread + p * kVec + k] = v[kColumns + T];
    }
  }
  template <int L, int kPerThread, int... T>
  static __device__ __forceinline__ void keep_level(std::integer_sequence<int, T...>, const acc_t (&v)[kValues],
                                                    acc_t* shared, int p, int k) {
    (keep_term<L, kPerThread, T>(v, shared, p, k), ...);
  }

  // The shared terms of level L at every element of a row held in registers (pack p's element k of term T
  // in shared[T * kPacks * kVec + p * kVec + k]): level 0's once the row is loaded, level L's once
  // reductions 0 to L - 1 are in r. Each is computed once an element, and kept for every later step.
  template <int L, int kPacks>
  static __device__ __forceinline__ void share_held(acc_t* shared, const pack_t (&row)[kColumns][kPacks], const acc_t* r,
                                                    int threads, int first, int limit, const Same<I, scalar_t>*... in) {
    if constexpr (has_level(L)) {
#pragma unroll
      for (int p = 0; p < kPacks; ++p) {
        const int col = p * threads * kVec + first;
        if (col < limit) {
          pack_t weights[kColumns];
          load_weights<share_step(L)>(weights, col, in...);
#pragma unroll
          for (int k = 0; k < kVec; ++k) {
            acc_t v[kValues];
            held_values<share_step(L)>(v, row, weights, p, k);
            if constexpr (L > 0) {
              held_lowers<L, kPacks * kVec>(std::make_integer_sequence<int, Op::kShared>{}, v, shared, p, k);
            }
            share<L>(v, r);
            keep_level<L, kPacks * kVec>(std::make_integer_sequence<int, Op::kShared>{}, v, shared, p, k);
          }
        }
      }
    }
  }

  // The multi-pass kernel loads column C's pack at `col`: an input's at its row's offset, a weight's at the column ...
  template <std::size_t C>
  static __device__ __forceinline__ void load_at(pack_t& pack, const scalar_t* ptr, int64_t base, int64_t col) {
    if constexpr (C < Op::kInputs) {
      pack = load<scalar_t, kVec>(ptr + base + col);
    } else {
      pack = load<scalar_t, kVec>(ptr + col);
    }
  }
  // ... every column a step reads (load_columns), or a pass's reductions read (reduce_pass).
  template <int S, std::size_t C>
  static __device__ __forceinline__ void load_column(pack_t& pack, const scalar_t* ptr, int64_t base, int64_t col) {
    if constexpr (reads<S, true>(C)) {
      load_at<C>(pack, ptr, base, col);
    }
  }
  template <int S>
  static __device__ __forceinline__ void load_columns(pack_t (&packs)[kColumns], int64_t base, int64_t col,
                                                      const Same<I, scalar_t>*... in) {
    (load_column<S, I>(packs[I], in, base, col), ...);
  }

  // v = step S's values at element k of the loaded packs, 0 for the columns it does not read.
  template <int S, std::size_t C>
  static __device__ __forceinline__ acc_t loaded_value(const pack_t& pack, int k) {
    if constexpr (reads<S, true>(C)) {
      return widen(pack, k);
    } else {
      return acc_t(0);
    }
  }
  template <int S>
  static __device__ __forceinline__ void loaded_values(acc_t (&v)[kValues], const pack_t (&packs)[kColumns], int k,
                                                       const acc_t* r) {
    ((v[I] = loaded_value<S, I>(packs[I], k)), ...);
    share_upto<S>(v, r);  // the terms the step does not read are computed on zeros and discarded
  }

  // This thread's fold of reduction S over its elements of a row held in registers (the argument of
  // reduction kKept kept for the output, in `kept`, unless kKeep is false).
  template <int S, int kPacks, bool kKeep>
  static __device__ __forceinline__ acc_t fold_held(const pack_t (&row)[kColumns][kPacks], const acc_t* r, acc_t* kept,
                                                    const acc_t* shared, int threads, int first, int limit,
                                                    const Same<I, scalar_t>*... in) {
    using Reduce = typename Op::template Reduce<S, acc_t>;
    acc_t acc = Reduce::identity();
#pragma unroll
    for (int p = 0; p < kPacks; ++p) {
      const int col = p * threads * kVec + first;
      if (col < limit) {
        pack_t weights[kColumns];
        load_weights<S>(weights, col, in...);
#pragma unroll
        for (int k = 0; k < kVec; ++k) {
          acc_t v[kValues];
          held_values<S>(v, row, weights, p, k);
          held_shared<S, kPacks * kVec>(v, shared, p, k);
          const acc_t value = arg<S>(v, r);
          if constexpr (kKeep && S == Op::kKept) {
            kept[p * kVec + k] = value;
          }
          acc = Reduce::combine(acc, value);
        }
      }
    }
    return acc;
  }

  // Reduction S over a row held in registers: each thread folds its elements, then row_reduce (and,
  // for a row shared by a cluster's blocks, Across: InCluster). The argument of reduction kKept is kept
  // for the output, in `kept`, unless kKeep is false.
  // In a cluster, a reduction J paired with a later S (Op::kOnline[S] == J) waits: r[J] holds the block's
  // own value (a mean's undivided sum), S's argument reads a stand-in for it (the block's maximum, 0
  // where that is -inf; the block's mean), and InCluster::reduce_pair completes both with one barrier
  // instead of two. Softmax, logsumexp and LayerNorm then wait for the other blocks once a row.
  template <int S, int kPacks, int kSlots, class Across = InBlock, bool kKeep = true>
  static __device__ __forceinline__ void reduce_held(const pack_t (&row)[kColumns][kPacks], acc_t* r, acc_t* kept,
                                                     acc_t* kept_scale, const acc_t* shared, acc_t* scratch, int threads, int first,
                                                     int limit, int64_t cols, const Same<I, scalar_t>*... in) {
    using Reduce = typename Op::template Reduce<S, acc_t>;
    constexpr int kWith = Across::kCluster ? Pairs<Op>::with(S) : -1;
    constexpr bool kWaits = Across::kCluster && paired_later<Op>(S);
    constexpr bool kCentered = Pairs<Op>::centered(S);
    if constexpr (kWith >= 0) {
      // Reduction kWith's value in this block alone goes to the block's first pair slot now (read back
      // after the exchange), so that no register holds it across the fold.
      const acc_t own = r[kWith];
      if (threadIdx.x == 0 && threadIdx.y == 0) {
        scratch[threads / kWarp] = own;
      }
      if constexpr (kCentered) {
        r[kWith] = limit > 0 ? own / static_cast<acc_t>(limit) : acc_t(0);
      } else {
        r[kWith] = own == opmath::MaxOp<acc_t>::identity() ? acc_t(0) : own;
      }
    }
    const acc_t acc = fold_held<S, kPacks, kKeep>(row, r, kept, shared, threads, first, limit, in...);
    // (InCluster's slots: those past the warps' slots of `scratch`.)
    const int warps = threads / kWarp;
    if constexpr (kWaits) {
      r[S] = row_reduce<Reduce>(acc, scratch, threads);
      return;
    } else if constexpr (kWith >= 0) {
      using ReduceJ = typename Op::template Reduce<kWith, acc_t>;
      acc_t value = row_reduce<Reduce>(acc, scratch, threads);
      acc_t scale = acc_t(1);
      r[kWith] = Across::template reduce_pair<ReduceJ, kCentered, kVec>(value, scale, cols, scratch + warps);
      if constexpr (Op::kMean[kWith]) {
        r[kWith] /= static_cast<acc_t>(cols);
      }
      r[S] = value;
      if constexpr (kKeep && S == Op::kKept && online_pair<Op>(S)) {
        // The kept arguments were computed at the block's maximum: the output brings them to the row's,
        // as the sum was (a multiply where it reads them: no loop over them here, whose registers
        // would spill).
        *kept_scale = scale;
      }
    } else {
      r[S] = Across::template reduce<Reduce>(row_reduce<Reduce>(acc, scratch, threads), scratch + warps);
    }
    if constexpr (Op::kMean[S]) {
      r[S] /= static_cast<acc_t>(cols);
    }
  }
  // Every reduction in order; each has its own kSlots slots of `scratch`. Before reduction S, the shared
  // terms of level S (S > 0: those that read the reductions before it).
  template <int S, int kPacks, int kSlots, class Across, bool kKeep>
  static __device__ __forceinline__ void step_held(const pack_t (&row)[kColumns][kPacks], acc_t* r, acc_t* kept,
                                                   acc_t* kept_scale, acc_t* shared, acc_t* scratch, int threads, int first,
                                                   int limit, int64_t cols, const Same<I, scalar_t>*... in) {
    if constexpr (S > 0) {
      share_held<S>(shared, row, r, threads, first, limit, in...);
    }
    reduce_held<S, kPacks, kSlots, Across, kKeep>(row, r, kept, kept_scale, shared, scratch + S * kSlots, threads, first,
                                                  limit, cols, in...);
  }
  template <int kPacks, int kSlots, class Across = InBlock, bool kKeep = true, int... S>
  static __device__ __forceinline__ void reduce_held(std::integer_sequence<int, S...>, const pack_t (&row)[kColumns][kPacks],
                                                     acc_t* r, acc_t* kept, acc_t* kept_scale, acc_t* shared,
                                                     acc_t* scratch, int threads, int first, int limit, int64_t cols,
                                                     const Same<I, scalar_t>*... in) {
    (step_held<S, kPacks, kSlots, Across, kKeep>(row, r, kept, kept_scale, shared, scratch, threads, first, limit, cols, in...), ...);
  }

  // A backward's reductions over a row held in registers, a pass at a time (Passes: GradOp numbers its
  // reductions pass by pass, kernelgen's rowplan.pass_of). Every thread folds each reduction of the pass; then
  // one exchange completes them all: each warp folds its values and writes them to their slots, one block
  // barrier, each row folds its warps' values (and, for a row shared by a cluster's blocks, one cluster
  // barrier and each block's values: Across::publish, sync, collect). Each reduction keeps its own slots
  // and the trees of row_reduce and InCluster::reduce, so the values are the bits of one exchange a
  // reduction, with a barrier a pass instead. Before each pass, the shared terms of the levels the
  // previous pass completed (terms of level L read reductions up to L - 1: a pass's own steps read none of
  // its reductions, so they need none of those); the terms of the last pass's levels are left to the caller.
  static __host__ __device__ constexpr int pass_first(int pass) {
    for (int s = 0; s < Op::kReductions; ++s) {
      if (Passes<Op>::of(s) == pass) {
        return s;
      }
    }
    return Op::kReductions;
  }
  static __host__ __device__ constexpr bool passes_in_order() {
    for (int s = 1; s < Op::kReductions; ++s) {
      if (Passes<Op>::of(s) < Passes<Op>::of(s - 1) || Passes<Op>::of(s) > Passes<Op>::of(s - 1) + 1) {
        return false;
      }
    }
    return Op::kReductions == 0 || Passes<Op>::of(0) == 0;
  }
  // The shared terms of levels (kLow, kHigh].
  template <int kLow, int kHigh, int kPacks, int... L>
  static __device__ __forceinline__ void share_held_levels(std::integer_sequence<int, L...>, acc_t* shared,
                                                           const pack_t (&row)[kColumns][kPacks], const acc_t* r, int threads,
                                                           int first, int limit, const Same<I, scalar_t>*... in) {
    (share_held_if<kLow, kHigh, L, kPacks>(shared, row, r, threads, first, limit, in...), ...);
  }
  template <int kLow, int kHigh, int L, int kPacks>
  static __device__ __forceinline__ void share_held_if(acc_t* shared, const pack_t (&row)[kColumns][kPacks], const acc_t* r,
                                                       int threads, int first, int limit, const Same<I, scalar_t>*... in) {
    if constexpr (L > kLow && L <= kHigh) {
      share_held<L>(shared, row, r, threads, first, limit, in...);
    }
  }
  template <int P, int S, int kPacks>
  static __device__ __forceinline__ void fold_pass(acc_t (&acc)[kAccs], const pack_t (&row)[kColumns][kPacks], const acc_t* r,
                                                   const acc_t* shared, int threads, int first, int limit,
                                                   const Same<I, scalar_t>*... in) {
    if constexpr (Passes<Op>::of(S) == P) {
      acc[S] = fold_held<S, kPacks, false>(row, r, nullptr, shared, threads, first, limit, in...);
    }
  }
  // Each warp's value of reduction S to its slot (row_reduce's first half).
  template <int P, int S, int kSlots>
  static __device__ __forceinline__ void publish_warps(acc_t (&acc)[kAccs], acc_t* scratch, int warps) {
    if constexpr (Passes<Op>::of(S) == P) {
      acc[S] = warp_fold<typename Op::template Reduce<S, acc_t>>(acc[S]);
      if (warps > 1 && threadIdx.x % kWarp == 0) {
        scratch[S * kSlots + threadIdx.y * warps + threadIdx.x / kWarp] = acc[S];
      }
    }
  }
  // The row's value of reduction S from its warps' slots (row_reduce's second half).
  template <int P, int S, int kSlots>
  static __device__ __forceinline__ void collect_warps(acc_t (&acc)[kAccs], const acc_t* scratch, int warps) {
    using Reduce = typename Op::template Reduce<S, acc_t>;
    if constexpr (Passes<Op>::of(S) == P) {
      if (warps > 1) {
        const int lane = threadIdx.x % kWarp;
        acc_t value = lane < warps ? scratch[S * kSlots + threadIdx.y * warps + lane] : Reduce::identity();
        for (int offset = warps / 2; offset > 0; offset /= 2) {
          value = Reduce::combine(value, __shfl_xor_sync(0xffffffffu, value, offset));
        }
        acc[S] = __shfl_sync(0xffffffffu, value, 0);
      }
    }
  }
  template <int P, int S, int kSlots, class Across>
  static __device__ __forceinline__ void publish_blocks(const acc_t (&acc)[kAccs], acc_t* scratch, int warps) {
    if constexpr (Passes<Op>::of(S) == P) {
      Across::publish(acc[S], scratch + S * kSlots + warps);
    }
  }
  template <int P, int S, int kSlots, class Across>
  static __device__ __forceinline__ void collect_blocks(acc_t (&acc)[kAccs], acc_t* r, acc_t* scratch, int warps, int64_t cols) {
    if constexpr (Passes<Op>::of(S) == P) {
      acc[S] = Across::template collect<typename Op::template Reduce<S, acc_t>>(acc[S], scratch + S * kSlots + warps);
      r[S] = Op::kMean[S] ? acc[S] / static_cast<acc_t>(cols) : acc[S];
    }
  }
  template <int P, int kPacks, int kSlots, class Across, int... S>
  static __device__ __forceinline__ void reduce_held_pass(std::integer_sequence<int, S...>, const pack_t (&row)[kColumns][kPacks],
                                                          acc_t* r, acc_t* shared, acc_t* scratch, int threads, int first,
                                                          int limit, int64_t cols, const Same<I, scalar_t>*... in) {
    if constexpr (P > 0) {
      share_held_levels<pass_first(P - 1), pass_first(P), kPacks>(std::make_integer_sequence<int, Op::kReductions + 1>{}, shared,
                                                                  row, r, threads, first, limit, in...);
    }
    acc_t acc[kAccs];
    (fold_pass<P, S, kPacks>(acc, row, r, shared, threads, first, limit, in...), ...);
    const int warps = threads / kWarp;
    (publish_warps<P, S, kSlots>(acc, scratch, warps), ...);
    if (warps > 1) {  // the same for the whole block: no thread skips the barrier
      __syncthreads();
    }
    (collect_warps<P, S, kSlots>(acc, scratch, warps), ...);
    (publish_blocks<P, S, kSlots, Across>(acc, scratch, warps), ...);
    Across::sync();
    (collect_blocks<P, S, kSlots, Across>(acc, r, scratch, warps, cols), ...);
  }
  template <int kPacks, int kSlots, class Across, int... P>
  static __device__ __forceinline__ void reduce_held_passes(std::integer_sequence<int, P...>, const pack_t (&row)[kColumns][kPacks],
                                                            acc_t* r, acc_t* shared, acc_t* scratch, int threads, int first,
                                                            int limit, int64_t cols, const Same<I, scalar_t>*... in) {
    static_assert(passes_in_order(), "GradOp::kPass numbers the reductions pass by pass: 0, 0, 1, 1, 1, 2, ...");
    (reduce_held_pass<P, kPacks, kSlots, Across>(std::make_integer_sequence<int, Op::kReductions>{}, row, r, shared, scratch,
                                                 threads, first, limit, cols, in...), ...);
    share_held_levels<pass_first(pass_count<Op>() - 1), Op::kReductions, kPacks>(
        std::make_integer_sequence<int, Op::kReductions + 1>{}, shared, row, r, threads, first, limit, in...);
  }

  // The multi-pass kernel's reductions, a pass at a time (Passes): one loop over the row loads every column
  // the pass's reductions read and folds each of them, then row_reduce completes each. r holds zeros for
  // the reductions not known yet: a shared term a pass's step does not read may be computed from them, and
  // is discarded.
  template <int P, std::size_t C, int... S>
  static __host__ __device__ constexpr bool pass_reads(std::integer_sequence<int, S...>) {
    return (false || ... || (Passes<Op>::of(S) == P && reads<S, true>(C)));
  }
  template <int P, std::size_t C>
  static __device__ __forceinline__ void load_pass_column(pack_t& pack, const scalar_t* ptr, int64_t base, int64_t col) {
    if constexpr (pass_reads<P, C>(std::make_integer_sequence<int, Op::kReductions>{})) {
      load_at<C>(pack, ptr, base, col);
    }
  }
  // Step S's argument at element k of the loaded packs, folded into acc[S], where S is of pass P.
  template <int P, int S>
  static __device__ __forceinline__ void fold_loaded(acc_t (&acc)[kAccs], const pack_t (&packs)[kColumns], int k,
                                                     const acc_t* r) {
    if constexpr (Passes<Op>::of(S) == P) {
      acc_t v[kValues];
      loaded_values<S>(v, packs, k, r);
      acc[S] = Op::template Reduce<S, acc_t>::combine(acc[S], arg<S>(v, r));
    }
  }
  template <int P, int S>
  static __device__ __forceinline__ void start_loaded(acc_t (&acc)[kAccs]) {
    if constexpr (Passes<Op>::of(S) == P) {
      acc[S] = Op::template Reduce<S, acc_t>::identity();
    }
  }
  template <int P, int kSlots, int S>
  static __device__ __forceinline__ void finish_loaded(const acc_t (&acc)[kAccs], acc_t* r, acc_t* scratch,
                                                      int64_t cols) {
    if constexpr (Passes<Op>::of(S) == P) {
      r[S] = row_reduce<typename Op::template Reduce<S, acc_t>>(acc[S], scratch + S * kSlots, kMaxThreads);
      if constexpr (Op::kMean[S]) {
        r[S] /= static_cast<acc_t>(cols);
      }
    }
  }
  template <int P, int kSlots, int... S>
  static __device__ __forceinline__ void reduce_pass(std::integer_sequence<int, S...>, acc_t* r, acc_t* scratch, int64_t base,
                                                     int64_t cols, const Same<I, scalar_t>*... in) {
    const int64_t stride = static_cast<int64_t>(blockDim.x) * kVec;
    acc_t acc[kAccs];
    (start_loaded<P, S>(acc), ...);
    for (int64_t col = static_cast<int64_t>(threadIdx.x) * kVec; col < cols; col += stride) {
      pack_t packs[kColumns];
      (load_pass_column<P, I>(packs[I], in, base, col), ...);
#pragma unroll
      for (int k = 0; k < kVec; ++k) {
        (fold_loaded<P, S>(acc, packs, k, r), ...);
      }
    }
    (finish_loaded<P, kSlots, S>(acc, r, scratch, cols), ...);
  }
  template <int kSlots, int... P>
  static __device__ __forceinline__ void reduce_loaded(std::integer_sequence<int, P...>, acc_t* r, acc_t* scratch,
                                                       int64_t base, int64_t cols, const Same<I, scalar_t>*... in) {
#pragma unroll
    for (int s = 0; s < Op::kReductions; ++s) {
      r[s] = acc_t(0);
    }
    (reduce_pass<P, kSlots>(std::make_integer_sequence<int, Op::kReductions>{}, r, scratch, base, cols, in...), ...);
  }
};

// One row held in registers, by the `threads` threads of one row of the block (thread t holds elements
// [(p * threads + t) * kVec, ... + kVec) for p < kPerThread / kVec): the row starts at `base` in the
// inputs and the output, its first `limit` elements are there (0: a row past the end, whose threads
// load and store nothing but take part in every barrier), and `cols` is its length (for a mean). The
// weights are indexed by the column. scratch: kSlots slots per reduction (row_reduce, and Across's slot).
// kKeep: whether the output reads reduction Op::kKept's argument from registers (kept while the
// reductions run) or computes it again from the held row (fewer registers, more arithmetic).
template <class Op, typename scalar_t, int kVec, int kPerThread, int kSlots, class Across, bool kKeep, std::size_t... I>
__device__ __forceinline__ void held_row(const Same<I, scalar_t>* __restrict__... in, scalar_t* __restrict__ out,
                                         int64_t base, int limit, int64_t cols, int threads,
                                         typename Op::template math_t<scalar_t>* scratch) {
  using Step = Steps<Op, scalar_t, kVec>;
  using acc_t = typename Step::acc_t;
  using pack_t = typename Step::pack_t;
  constexpr int kPacks = kPerThread / kVec;
  const int first = static_cast<int>(threadIdx.x) * kVec;

  // ---- load the row: all loads first, so that they are in flight together ----
  // The packs are kept as loaded (a float16 or bfloat16 register holds two elements) and widened to
  // acc_t at each use: a row of two inputs in acc_t takes every register the kernel has and spills.
  // (Only the inputs' entries are used: the weights are loaded where a step reads them.)
  pack_t row_v[Step::kColumns][kPacks];
  Step::hold_row(row_v, base, threads, first, limit, in...);

  // ---- the shared terms: once per element, kept in registers for every step that reads them ----
  acc_t shared[Op::kShared > 0 ? Op::kShared * kPerThread : 1];
  Step::template share_held<0>(shared, row_v, nullptr, threads, first, limit, in...);

  // ---- the reductions, in order ----
  acc_t r[Op::kReductions];
  // The output reuses reduction kKept's per-element argument: kept here, in the registers the inputs
  // free once it is computed, instead of evaluated twice (transcendental math such as exp would
  // otherwise make the half-precision kernels compute-bound). The deep cluster build, whose row takes
  // those registers, evaluates it again (kKeep false).
  acc_t kept[kKeep && Op::kKept >= 0 ? kPerThread : 1];
  // In a cluster, an online sum's kept arguments are at the block's maximum, and the output multiplies
  // them by kept_scale to bring them to the row's (Steps::reduce_held); 1 otherwise.
  acc_t kept_scale = acc_t(1);
  constexpr bool kScaled = Across::kCluster && online_pair<Op>(Op::kKept);
  Step::template reduce_held<kPacks, kSlots, Across, kKeep>(std::make_integer_sequence<int, Op::kReductions>{}, row_v, r, kept,
                                                     &kept_scale, shared, scratch, threads, first, limit, cols, in...);
  Across::reduced();

  // ---- the output ----
#pragma unroll
  for (int p = 0; p < kPacks; ++p) {
    const int col = p * threads * kVec + first;
    if (col < limit) {
      pack_t weights[Step::kColumns];
      Step::template load_weights<Step::kOutput>(weights, col, in...);
      pack_t kept_weights[Step::kColumns];
      if constexpr (!kKeep && Op::kKept >= 0) {
        Step::template load_weights<Op::kKept>(kept_weights, col, in...);
      }
      pack_t result;
#pragma unroll
      for (int k = 0; k < kVec; ++k) {
        acc_t v[Step::kValues];
        Step::template held_values<Step::kOutput>(v, row_v, weights, p, k);
        Step::template held_shared<Step::kOutput, kPerThread>(v, shared, p, k);
        acc_t kept_value = acc_t(0);
        if constexpr (kKeep && Op::kKept >= 0) {
          kept_value = kScaled ? kept[p * kVec + k] * kept_scale : kept[p * kVec + k];
        } else if constexpr (Op::kKept >= 0) {
          acc_t kv[Step::kValues];
          Step::template held_values<Op::kKept>(kv, row_v, kept_weights, p, k);
          Step::template held_shared<Op::kKept, kPerThread>(kv, shared, p, k);
          kept_value = Step::template arg<Op::kKept>(kv, r);
        }
        result.v[k] = static_cast<scalar_t>(Step::out(v, kept_value, r));
      }
      *reinterpret_cast<pack_t*>(out + base + col) = result;
    }
  }
}

// Rows of up to kMaxRegisterCols elements. Block (threads per row) x (blockDim.y rows), each row held
// by held_row.
// At most 64 registers per thread (two blocks of kMaxThreads per SM, or one of kWideThreads), so that
// enough warps are resident. kBlockThreads: the largest block the kernel is launched with.
// kThreads: the threads per row when the launch fixes it at compile time (kMaxThreads or kWideThreads,
// the longest rows of float32/float64), else 0 (blockDim.x). With it every access of a row is one
// pointer plus a constant offset; with blockDim.x known only at run time the compiler keeps an
// address per pack and spills registers at the 64-register cap (LayerNorm at rows of 16384 float32:
// 76% of a copy's bandwidth and 458,752 local-memory requests per launch in ncu, against 98%).
template <class Op, typename scalar_t, int kVec, int kPerThread, int kThreads, int kBlockThreads, std::size_t... I>
__global__ void __launch_bounds__(kBlockThreads, kWideThreads / kBlockThreads)
rows_kernel(const Same<I, scalar_t>* __restrict__... in, scalar_t* __restrict__ out, int64_t rows, int64_t cols) {
  using acc_t = typename Op::template math_t<scalar_t>;
  constexpr int kSlots = kBlockThreads / kWarp;  // one slot per warp of the block, whatever the shape
  __shared__ acc_t scratch[Op::kReductions][kSlots];
  const int threads = kThreads > 0 ? kThreads : static_cast<int>(blockDim.x);
  const int64_t row = static_cast<int64_t>(blockIdx.x) * blockDim.y + threadIdx.y;
  // A block's last rows may lie past the end: their threads load and store nothing but still take
  // part in every barrier of the block. Column offsets fit an int: cols <= kMaxRegisterCols here.
  const int limit = row < rows ? static_cast<int>(cols) : 0;
  const int64_t base = row * cols;
  held_row<Op, scalar_t, kVec, kPerThread, kSlots, InBlock, true, I...>(in..., out, base, limit, cols, threads, &scratch[0][0]);
}

// Rows longer than the register kernel holds, up to kMaxClusterBlocks * kMaxThreads * kPerThread
// elements (sm_90 and later): a thread-block cluster of kMaxThreads-thread blocks per row, launched with
// its size (the blocks a row takes) at run time. Block `rank` of the cluster holds columns [rank *
// chunk, rank * chunk + chunk) of row blockIdx.x / (cluster size) in registers, exactly as rows_kernel
// holds a row, and every reduction is completed across the cluster (InCluster). Every element is read
// from HBM once and written once: a softmax over 262144 columns moves the bytes of a copy, where the
// multi-pass kernel reads its row three times. chunk is a multiple of kVec, so every block's slice
// starts 16-byte aligned when the row does. kMinBlocks: the blocks an SM must hold at once, which caps
// a thread's registers (2: 64 registers; 3: 40); the launch takes the build of 3 unless that cap made
// it spill (launch_cluster_rows).
template <class Op, typename scalar_t, int kVec, int kPerThread, int kThreads, int kMinBlocks, bool kKeep, std::size_t... I>
__global__ void __launch_bounds__(kMaxThreads, kMinBlocks)
cluster_rows_kernel(const Same<I, scalar_t>* __restrict__... in, scalar_t* __restrict__ out, int64_t cols, int chunk) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  namespace cg = cooperative_groups;
  using acc_t = typename Op::template math_t<scalar_t>;
  // One slot per warp for row_reduce, and InCluster's two after them (reduce takes one, reduce_pair two).
  constexpr int kSlots = kMaxThreads / kWarp + 2;
  __shared__ acc_t scratch[Op::kReductions][kSlots];
  const cg::cluster_group cluster = cg::this_cluster();
  const int64_t row = static_cast<int64_t>(blockIdx.x) / cluster.num_blocks();
  const int64_t start = static_cast<int64_t>(cluster.block_rank()) * chunk;
  // (No std::min/max in device code: the oldest supported torch builds without --expt-relaxed-constexpr.)
  const int64_t left = cols - start;
  const int limit = static_cast<int>(left <= 0 ? 0 : (left < chunk ? left : chunk));
  const int64_t base = row * cols;
  // The slice as a row of its own: every pointer moved to its first column (the inputs' and the
  // output's rows at `base` from there, the weights indexed by the column).
  held_row<Op, scalar_t, kVec, kPerThread, kSlots, InCluster, kKeep, I...>((in + start)..., out + start, base, limit, cols,
                                                                    kThreads > 0 ? kThreads : static_cast<int>(blockDim.x),
                                                                    &scratch[0][0]);
  // Other blocks of the cluster may still be reading this block's last slot: its shared memory must
  // outlive their reads (each block arrived at this barrier after its last read: InCluster::reduced).
  cluster.barrier_wait();
#else
  __trap();  // never launched: Launch takes this kernel only where the device runs its sm_90 code
#endif
}

// Rows longer than kMaxRegisterCols: one block of kMaxThreads threads per row. Each pass of reductions
// (Passes: the reductions that read nothing of each other) is a loop over the row, and so is the output:
// the row is read once per pass and once more (from L2 when it still holds it), written once.
template <class Op, typename scalar_t, int kVec, std::size_t... I>
__global__ void __launch_bounds__(kMaxThreads)
long_rows_kernel(const Same<I, scalar_t>* __restrict__... in, scalar_t* __restrict__ out, int64_t cols) {
  using Step = Steps<Op, scalar_t, kVec>;
  using acc_t = typename Step::acc_t;
  using pack_t = typename Step::pack_t;
  constexpr int kSlots = kMaxThreads / kWarp;
  __shared__ acc_t scratch[Op::kReductions][kSlots];
  const int64_t base = static_cast<int64_t>(blockIdx.x) * cols;
  const int64_t stride = static_cast<int64_t>(blockDim.x) * kVec;

  acc_t r[Op::kReductions];
  Step::template reduce_loaded<kSlots>(std::make_integer_sequence<int, pass_count<Op>()>{}, r, &scratch[0][0], base, cols,
                                       in...);

  // ---- the output ----
  for (int64_t col = static_cast<int64_t>(threadIdx.x) * kVec; col < cols; col += stride) {
    pack_t packs[Step::kColumns];
    Step::template load_columns<Step::kOutput>(packs, base, col, in...);
    pack_t result;
#pragma unroll
    for (int k = 0; k < kVec; ++k) {
      acc_t v[Step::kValues];
      Step::template loaded_values<Step::kOutput>(v, packs, k, r);
      acc_t kept = acc_t(0);
      if constexpr (Op::kKept >= 0) {
        kept = Step::template arg<Op::kKept>(v, r);
      }
      result.v[k] = static_cast<scalar_t>(Step::out(v, kept, r));
    }
    *reinterpret_cast<pack_t*>(out + base + col) = result;
  }
}

// The launch of `clusters` clusters of `blocks` blocks of kMaxThreads threads (cudaLaunchKernelEx,
// cudaOccupancyMaxActiveClusters); `attribute` holds the cluster's size, and must outlive the config.
cudaLaunchConfig_t cluster_launch(int64_t clusters, int blocks, cudaStream_t stream, cudaLaunchAttribute& attribute) {
  attribute = cudaLaunchAttribute{};
  attribute.id = cudaLaunchAttributeClusterDimension;
  attribute.val.clusterDim.x = static_cast<unsigned int>(blocks);
  attribute.val.clusterDim.y = 1;
  attribute.val.clusterDim.z = 1;
  cudaLaunchConfig_t config{};
  config.gridDim = dim3(static_cast<unsigned int>(clusters * blocks));
  config.blockDim = dim3(kMaxThreads);
  config.stream = stream;
  config.attrs = &attribute;
  config.numAttrs = 1;
  return config;
}

// The clusters of `blocks` blocks of kMaxThreads threads of `kernel`, a cluster kernel, that the GPU holds at
// once, each block with `dynamic_bytes` of dynamic shared memory (the kernel already allowed them): 0 where the
// device does not run its sm_90 code (a binary built without 9.0 in its arch list, or a GPU before Hopper, has
// none: the kernel's body is compiled out) or no such cluster fits. The forward's and the backward's launches
// ask it once per device and cluster size.
template <class Kernel>
int max_active_clusters(Kernel kernel, int blocks, int64_t dynamic_bytes) {
  cudaFuncAttributes attributes{};
  STD_CUDA_CHECK(cudaFuncGetAttributes(&attributes, kernel));
  int clusters = 0;
  if (attributes.ptxVersion >= 90) {
    if (blocks > kPortableClusterBlocks) {  // past the portable size a kernel must opt in
      STD_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeNonPortableClusterSizeAllowed, 1));
    }
    cudaLaunchAttribute attribute{};
    cudaLaunchConfig_t config = cluster_launch(1, blocks, nullptr, attribute);
    config.dynamicSmemBytes = static_cast<size_t>(dynamic_bytes);
    STD_CUDA_CHECK(cudaOccupancyMaxActiveClusters(&clusters, kernel, &config));
  }
  return clusters;
}

bool is_aligned(const void* ptr) {
  return reinterpret_cast<std::uintptr_t>(ptr) % kVectorBytes == 0;
}

// Whether ptxas made kernel `a` take at least `by` bytes more local memory a thread than kernel `b`
// (cudaFuncGetAttributes' localSizeBytes: registers spilled, and the stack): the launches compare two builds
// of one kernel with it, and keep the answer (PerDevice).
template <class KernelA, class KernelB>
bool spills_more(KernelA a, KernelB b, int by) {
  cudaFuncAttributes a_attributes{};
  cudaFuncAttributes b_attributes{};
  STD_CUDA_CHECK(cudaFuncGetAttributes(&a_attributes, a));
  STD_CUDA_CHECK(cudaFuncGetAttributes(&b_attributes, b));
  return a_attributes.localSizeBytes >= b_attributes.localSizeBytes + static_cast<size_t>(by);
}

// Threads per row of a register kernel at `per_thread` elements a thread: a power of two from one warp
// to `most`, enough for the row where `most` is.
inline int row_threads(int64_t cols, int per_thread, int most) {
  int threads = kWarp;
  while (threads < most && int64_t{threads} * per_thread < cols) {
    threads *= 2;
  }
  return threads;
}

// log2(threads / kWarp): which of a launch's thread counts (kWarp, 2 kWarp, ... kWideThreads) `threads` is.
constexpr int thread_count_index(int threads) {
  int index = 0;
  while ((kWarp << index) < threads) {
    ++index;
  }
  return index;
}

template <class Op, typename scalar_t, class Columns = std::make_index_sequence<Op::kInputs + Op::kWeights>>
struct Launch;

template <class Op, typename scalar_t, std::size_t... I>
struct Launch<Op, scalar_t, std::index_sequence<I...>> {
  using RowsKernel = void (*)(const Same<I, scalar_t>*..., scalar_t*, int64_t, int64_t);

  // Threads per row of the register kernel at kPerThread elements a thread, for rows of up to kMaxCols:
  // kWideThreads at most where kMaxThreads are not enough for them (per_thread() below kLongPerThread).
  template <int kPerThread, int64_t kMaxCols>
  static int row_threads(int64_t cols) {
    constexpr bool kWide = int64_t{kPerThread} * kMaxThreads < kMaxCols;
    return rowwise::row_threads(cols, kPerThread, kWide ? kWideThreads : kMaxThreads);
  }

  // The build of rows_kernel that holds rows of `threads` threads at kPerThread elements a thread.
  // At kMaxThreads and kWideThreads, float32/float64 take the kernel with the thread count fixed at
  // compile time. The 2-byte types do not: their kernels do not spill without it, and with it the
  // bfloat16 softmax at rows of 16384 runs at 76% of a copy's bandwidth against 97% (same
  // instruction count and occupancy, more stalls per instruction in ncu).
  template <int kVec, int kPerThread, int64_t kMaxCols>
  static RowsKernel register_kernel(int threads) {
    constexpr bool kFixedThreads = sizeof(scalar_t) > 2;
    if constexpr (int64_t{kPerThread} * kMaxThreads < kMaxCols) {
      if (threads == kWideThreads) {
        return rows_kernel<Op, scalar_t, kVec, kPerThread, kFixedThreads ? kWideThreads : 0, kWideThreads, I...>;
      }
    }
    if (kFixedThreads && threads == kMaxThreads) {
      return rows_kernel<Op, scalar_t, kVec, kPerThread, kFixedThreads ? kMaxThreads : 0, kMaxThreads, I...>;
    }
    return rows_kernel<Op, scalar_t, kVec, kPerThread, 0, kMaxThreads, I...>;
  }

  // Rows of up to kMaxCols elements (at most kPerThread * kWideThreads), held in registers.
  template <int kVec, int kPerThread, int64_t kMaxCols>
  static void launch_register_rows(const Same<I, scalar_t>*... in, scalar_t* out, int64_t rows, int64_t cols, cudaStream_t stream) {
    const int threads = row_threads<kPerThread, kMaxCols>(cols);
    const RowsKernel kernel = register_kernel<kVec, kPerThread, kMaxCols>(threads);
    const int rows_per_block = std::max(1, kRowBlockThreads / threads);
    const dim3 block(threads, rows_per_block);
    const int64_t max_rows = kMaxBlocks * rows_per_block;
    for (int64_t start = 0; start < rows; start += max_rows) {
      const int64_t count = std::min(rows - start, max_rows);
      const int64_t offset = start * cols;
      const auto blocks = static_cast<unsigned int>((count + rows_per_block - 1) / rows_per_block);
      kernel<<<blocks, block, 0, stream>>>((I < Op::kInputs ? in + offset : in)..., out + offset, count, cols);
      // Kernel launches are asynchronous: a bad launch configuration is only reported by the next CUDA
      // call, far from its cause, unless it is checked right here.
      STD_CUDA_KERNEL_LAUNCH_CHECK();
    }
  }

  // Whether rows of `cols` take the narrow build of the register kernel (kNarrow elements a thread, twice
  // the threads or more) instead of the dense one (kDense): where the dense build the launch would take
  // spills and the narrow one spills less (spills_more). per_thread() sizes the row's
  // registers from the values it holds, not from the formula's temporaries, and a formula that needs many
  // (several reductions whose arguments share nothing, a weight read inside a reduction) can fill the 64
  // registers beside a row that fits its budget. Asked once per device and thread count.
  // A narrow build of kWideThreads a row (one block an SM: its barriers stall the whole SM) is taken only
  // where it spares at least kWideSpillBytes. On an H100 at rows of 16384, in 1024 threads against 512: a
  // residual LayerNorm whose dense build spills 64-72 bytes runs 1.11x faster, an op of three reductions
  // that spills 104 bytes in float32 1.04x, one that spills 68-80 bytes 0.95-0.99x, and one of three
  // reductions and a cos that spills 24-32 bytes 0.76x.
  static constexpr int kWideSpillBytes = 64;
  template <int kVec, int kDense, int64_t kDenseCols, int kNarrow, int64_t kNarrowCols>
  static bool takes_narrow(int64_t cols) {
    static PerDevice<bool, thread_count_index(kWideThreads) + 1> known;
    const int threads = row_threads<kNarrow, kNarrowCols>(cols);
    return known.get(thread_count_index(threads), [&] {
      return spills_more(register_kernel<kVec, kDense, kDenseCols>(row_threads<kDense, kDenseCols>(cols)),
                         register_kernel<kVec, kNarrow, kNarrowCols>(threads), threads < kWideThreads ? 1 : kWideSpillBytes);
    });
  }

  // Whether a cluster kernel runs here in clusters of `blocks` blocks of kMaxThreads (at least one such cluster
  // fits: max_active_clusters), per device and cluster size. Each kernel keeps its own (kernels of one
  // signature differ in their registers).
  using Fits = PerDevice<bool, kMaxClusterBlocks + 1>;

  // Rows longer than the register kernel holds, in the registers of a cluster of blocks per row
  // (cluster_rows_kernel). Returns false, launching nothing, where the row takes more than
  // kMaxClusterBlocks blocks or the device cannot run the cluster: the caller then takes the
  // multi-pass kernel.
  template <int kVec>
  static bool launch_cluster_rows(const Same<I, scalar_t>*... in, scalar_t* out, int64_t rows, int64_t cols,
                                  cudaStream_t stream) {
    // float32/float64 fix the thread count at compile time, as launch_register_rows does.
    constexpr int kThreads = sizeof(scalar_t) > 2 ? kMaxThreads : 0;
    constexpr int kPerThread = per_thread<Op, scalar_t, kVec>();
    // A row that takes more than kPortableClusterBlocks blocks at kPerThread elements a thread takes the
    // deep build where it holds more: cluster_start()'s, with the kept argument in registers or, where
    // that halves the count, computed again for the output (a 2-byte softmax: 64 elements a thread and
    // its exp twice, not 32 and once). It is built for two blocks an SM only: at 64 elements its
    // three-block build spills.
    constexpr int kDeepKept = per_thread<Op, scalar_t, kVec, kRowRegisters, cluster_start<Op, scalar_t>(), true>();
    constexpr int kDeepFreed = per_thread<Op, scalar_t, kVec, kRowRegisters, cluster_start<Op, scalar_t>(), false>();
    constexpr bool kKeep = kDeepKept >= kDeepFreed;
    constexpr int kDeep = kKeep ? kDeepKept : kDeepFreed;
    if constexpr (kDeep > kPerThread) {
      if (cols > int64_t{kPortableClusterBlocks} * kMaxThreads * kPerThread) {
        static Fits deep_known;
        const auto deep = cluster_rows_kernel<Op, scalar_t, kVec, kDeep, kThreads, kWideThreads / kMaxThreads, kKeep, I...>;
        return launch_cluster<kVec, kDeep>(deep, deep_known, in..., out, rows, cols, stream);
      }
    }
    // The build for three blocks an SM (40 registers a thread) where ptxas fitted it without spilling, its
    // local memory no larger than the 64-register build's. Three 512-thread blocks keep 48 warps an SM
    // resident, two keep 32; an arithmetic-bound row then hides its latency better (on an H100, a bfloat16
    // formula at rows of 16384 takes 601 us at 46 registers, two blocks an SM, and 532 us at 40 registers,
    // three blocks). Asked once per device.
    const auto dense = cluster_rows_kernel<Op, scalar_t, kVec, kPerThread, kThreads, 3, true, I...>;
    const auto wide = cluster_rows_kernel<Op, scalar_t, kVec, kPerThread, kThreads, kWideThreads / kMaxThreads, true, I...>;
    static PerDevice<bool> dense_spills;
    static Fits dense_known;
    static Fits wide_known;
    return !dense_spills.get([&] { return spills_more(dense, wide, 1); })
               ? launch_cluster<kVec, kPerThread>(dense, dense_known, in..., out, rows, cols, stream)
               : launch_cluster<kVec, kPerThread>(wide, wide_known, in..., out, rows, cols, stream);
  }

  template <int kVec, int kPerThread, class Kernel>
  static bool launch_cluster(Kernel kernel, Fits& known, const Same<I, scalar_t>*... in, scalar_t* out, int64_t rows,
                             int64_t cols, cudaStream_t stream) {
    constexpr int64_t kBlockCols = int64_t{kPerThread} * kMaxThreads;  // the most columns one block holds
    const int64_t blocks = (cols + kBlockCols - 1) / kBlockCols;
    if (blocks > kMaxClusterBlocks) {
      return false;
    }
    if (!known.get(static_cast<int>(blocks), [&] { return max_active_clusters(kernel, static_cast<int>(blocks), 0) > 0; })) {
      return false;
    }
    const int chunk = static_cast<int>(cluster_chunk(cols, blocks, kVec));
    const int64_t max_rows = kMaxBlocks / blocks;
    for (int64_t start = 0; start < rows; start += max_rows) {
      const int64_t count = std::min(rows - start, max_rows);
      const int64_t offset = start * cols;
      cudaLaunchAttribute attribute{};
      const cudaLaunchConfig_t config = cluster_launch(count, static_cast<int>(blocks), stream, attribute);
      const cudaError_t status =
          cudaLaunchKernelEx(&config, kernel, (I < Op::kInputs ? in + offset : in)..., out + offset, cols, chunk);
      if (status == cudaErrorInvalidClusterSize && start == 0) {
        // The occupancy API said the cluster fits and the launch says it does not (compute-sanitizer's
        // instrumented kernels take more registers, for one): the error is cleared, nothing ran, and
        // the multi-pass kernel takes these rows, now and from then on.
        (void)cudaGetLastError();
        known.set(static_cast<int>(blocks), false);
        return false;
      }
      STD_CUDA_CHECK(status);
      STD_CUDA_KERNEL_LAUNCH_CHECK();  // as in launch_register_rows
    }
    return true;
  }

  template <int kVec>
  static void launch_rows(const Same<I, scalar_t>*... in, scalar_t* out, int64_t rows, int64_t cols, cudaStream_t stream) {
    if (cols > max_register_cols<Op, scalar_t, kVec>()) {
      if (launch_cluster_rows<kVec>(in..., out, rows, cols, stream)) {
        return;
      }
      // One block per row; a grid of more than kMaxBlocks rows is split into several launches.
      for (int64_t start = 0; start < rows; start += kMaxBlocks) {
        const int64_t count = std::min(rows - start, kMaxBlocks);
        const int64_t offset = start * cols;
        long_rows_kernel<Op, scalar_t, kVec, I...><<<static_cast<unsigned int>(count), kMaxThreads, 0, stream>>>(
            (I < Op::kInputs ? in + offset : in)..., out + offset, cols);
        STD_CUDA_KERNEL_LAUNCH_CHECK();  // as in launch_register_rows
      }
      return;
    }
    // kShortPerThread elements per thread for float32/float64 rows of up to kMaxShortCols elements (or
    // per_thread(), when fewer fit); per_thread() for the 2-byte types, and for longer rows.
    constexpr int kLong = per_thread<Op, scalar_t, kVec>();
    constexpr int64_t kLongCols = max_register_cols<Op, scalar_t, kVec>();
    if constexpr (sizeof(scalar_t) > 2 && kLong > kShortPerThread) {
      if (cols <= kMaxShortCols) {
        launch_register_rows<kVec, kShortPerThread, kMaxShortCols>(in..., out, rows, cols, stream);
        return;
      }
    }
    // The narrow build: the row's values in half the registers (half the elements a thread, or fewer),
    // where the dense build spills (takes_narrow). On an H100, a residual LayerNorm (two inputs, two
    // weights) whose dense build spills 64-72 bytes in float16/bfloat16 runs 1.16-1.19x faster at rows of
    // 1024 and 4096, from 86-88% of a copy's bandwidth to 101-102%.
    constexpr int kNarrow = per_thread<Op, scalar_t, kVec, kRowRegisters / 2, kLong>();
    constexpr int64_t kNarrowCols = std::min(kLongCols, int64_t{kNarrow} * kWideThreads);
    if constexpr (kNarrow < kLong) {
      if (cols <= kNarrowCols && takes_narrow<kVec, kLong, kLongCols, kNarrow, kNarrowCols>(cols)) {
        launch_register_rows<kVec, kNarrow, kNarrowCols>(in..., out, rows, cols, stream);
        return;
      }
    }
    launch_register_rows<kVec, kLong, kLongCols>(in..., out, rows, cols, stream);
  }

  // out[row, :] = the op over row `row` of the inputs (and the weights), for `rows` rows of `cols`.
  static void run(const Same<I, scalar_t>*... in, scalar_t* out, int64_t rows, int64_t cols, cudaStream_t stream) {
    constexpr int kVec = kVectorBytes / sizeof(scalar_t);
    // Every row starts 16-byte aligned when the row length is a multiple of the vector and the
    // pointers are aligned (a view such as x[1:] starts one element into its storage: it is not).
    if (cols % kVec == 0 && (is_aligned(in) && ...) && is_aligned(out)) {
      launch_rows<kVec>(in..., out, rows, cols, stream);
    } else {
      launch_rows<1>(in..., out, rows, cols, stream);
    }
  }
};


// ---- the backward ------------------------------------------------------------------------------
// An op's backward is a rowwise op too (GradOp in csrc/<op>/<op>.h): its columns are the output's
// gradient, the op's inputs and its weights; its reductions are the forward's per-row values that the
// gradients read, computed again from the inputs, and the backward's own (a softmax's sum(g * y)); then,
// per element, every column's gradient. The forward saves no per-row statistic for it: the backward
// holds the row in registers anyway, so computing them again costs arithmetic, not memory traffic. The
// kernels are the forward's, with two differences:
//   * each input's gradient is a row like the output, written only where asked for (a null pointer);
//   * a weight's gradient is the sum of its per-element contributions over all the rows, a column
//     reduction. Each row slot (a row of a block) works through rows slot, slot + slots, ... and keeps
//     its columns' sums in shared memory, each thread its own (the multi-pass kernel: in registers over a
//     group of rows, then in its own row of the buffer); it writes them once to a buffer of partial sums in the math type, one row per slot,
//     and column_sum_kernel adds the slots up in a fixed order. No atomics: the weights' gradients are
//     bitwise reproducible. The slots fill the GPU once (every SM's resident blocks), so the buffer is
//     small, and their number depends only on the row length, the dtype and the GPU. An op with weights
//     always runs this kernel, their gradients asked for or not (then nothing is written for them), so
//     that its inputs' gradients are the same bits either way.

// Where the gradients go: an input's row-shaped gradient, and a weight's partial sums (`slots` rows of
// `cols` in the math type); null where a gradient is not asked for.
template <class Op, typename scalar_t>
struct GradOutputs {
  static constexpr int kInputGrads = Op::kInputs - 1;  // column 0 is the output's gradient
  scalar_t* input[kInputGrads];
  typename Op::template math_t<scalar_t>* weight[Op::kWeights > 0 ? Op::kWeights : 1];
};

// The shared memory a block of the backward's register kernel keeps its weights' running sums in: one
// math-type value per weight and element, for each thread. Laid out [thread][weight][element], each
// thread's kSums * kPerThread values followed by one unused (sum_stride): a thread finds every sum of
// its own at a fixed offset from one address, so the unrolled loops hold no index in registers, and the
// odd stride puts the threads of a warp in 32 different banks.
extern __shared__ __align__(16) unsigned char grad_sums_memory[];

// The values of one thread's running sums, and the one after them.
__host__ __device__ constexpr int sum_stride(int sums, int per_thread) { return sums * per_thread + 1; }

// One row's gradients, held in registers (grad_rows_kernel, grad_cluster_rows_kernel): the row (or a cluster
// block's slice of it: every pointer in `in` moved to the slice's first column, `start` its offset in the
// row, `limit` its length) is loaded, the shared terms and the reductions computed (Across completes each
// reduction over the cluster where blocks share the row), then every column's gradient per element: the
// inputs' are stored, and each weight's contribution is added to this thread's running sums (`sums`, at
// [weight][element] from sums + me * sum_stride; kSums 0: none kept).
template <class Op, typename scalar_t, int kVec, int kPerThread, int kSlots, class Across, int kSums, std::size_t... I>
__device__ __forceinline__ void grad_held_row(const Same<I, scalar_t>* __restrict__... in, GradOutputs<Op, scalar_t> out,
                                              int64_t row_base, int64_t start, int limit, int64_t cols, int threads,
                                              typename Op::template math_t<scalar_t>* scratch,
                                              typename Op::template math_t<scalar_t>* sums, int me) {
  using Step = Steps<Op, scalar_t, kVec>;
  using acc_t = typename Step::acc_t;
  using pack_t = typename Step::pack_t;
  constexpr int kPacks = kPerThread / kVec;
  constexpr int kInputGrads = Op::kInputs - 1;
  const int first = static_cast<int>(threadIdx.x) * kVec;
  pack_t row_v[Step::kColumns][kPacks];
  Step::hold_row(row_v, row_base, threads, first, limit, in...);
  // (Zeros for the reductions not known yet: a pass's steps copy them with the earlier ones, and read none.)
  acc_t r[Op::kReductions + 1] = {};
  r[Op::kReductions] = static_cast<acc_t>(cols);  // the row length, after the reductions
  // The shared terms (GradOp::kShared), once per element, kept for every step that reads them: those of
  // level 0 now, the others before the first pass that may read them (reduce_held_passes; the gradients).
  acc_t shared[Op::kShared > 0 ? Op::kShared * kPerThread : 1];
  Step::template share_held<0>(shared, row_v, r, threads, first, limit, in...);
  // The reductions a pass at a time, each pass's completed with one barrier; then the terms that read the last.
  Step::template reduce_held_passes<kPacks, kSlots, Across>(std::make_integer_sequence<int, pass_count<Op>()>{}, row_v, r,
                                                            shared, scratch, threads, first, limit, cols, in...);
#pragma unroll
  for (int p = 0; p < kPacks; ++p) {
    const int col = p * threads * kVec + first;
    if (col < limit) {
      pack_t weight_packs[Step::kColumns];
      Step::template load_weights<Step::kOutput>(weight_packs, col, in...);
      pack_t result[kInputGrads];
#pragma unroll
      for (int k = 0; k < kVec; ++k) {
        acc_t v[Step::kValues];
        Step::template held_values<Step::kOutput>(v, row_v, weight_packs, p, k);
        Step::template held_shared<Step::kOutput, kPerThread>(v, shared, p, k);
        acc_t d[Step::kColumns - 1];
        Step::grads(v, r, d);
#pragma unroll
        for (int j = 0; j < kInputGrads; ++j) {
          result[j].v[k] = static_cast<scalar_t>(d[j]);
        }
#pragma unroll
        for (int j = 0; j < kSums; ++j) {
          sums[me * sum_stride(kSums, kPerThread) + j * kPerThread + p * kVec + k] += d[kInputGrads + j];
        }
      }
#pragma unroll
      for (int j = 0; j < kInputGrads; ++j) {
        if (out.input[j] != nullptr) {
          *reinterpret_cast<pack_t*>(out.input[j] + start + row_base + col) = result[j];
        }
      }
    }
  }
}

// Writes a block's running sums (grad_held_row) to row `slot` of each asked-for weight's partial sums,
// at the block's columns (its slice from `start`, `limit` long).
template <class Op, typename scalar_t, int kVec, int kPerThread, int kSums>
__device__ __forceinline__ void write_sums(GradOutputs<Op, scalar_t> out, const typename Op::template math_t<scalar_t>* sums,
                                           int64_t slot, int64_t start, int limit, int64_t cols, int threads, int me) {
  constexpr int kPacks = kPerThread / kVec;
  const int first = static_cast<int>(threadIdx.x) * kVec;
#pragma unroll
  for (int j = 0; j < kSums; ++j) {
    if (out.weight[j] != nullptr) {
#pragma unroll
      for (int p = 0; p < kPacks; ++p) {
        const int col = p * threads * kVec + first;
        if (col < limit) {
#pragma unroll
          for (int k = 0; k < kVec; ++k) {
            out.weight[j][slot * cols + start + col + k] = sums[me * sum_stride(kSums, kPerThread) + j * kPerThread + p * kVec + k];
          }
        }
      }
    }
  }
}

// The backward over rows held in registers (as rows_kernel); each row slot takes rows slot, slot +
// gridDim.x * blockDim.y, ... and, with kWeightGrads, sums the weights' contributions over them.
// kMinBlocks: the blocks of kBlockThreads an SM must hold at once, which caps the registers a thread
// (65536 / (kMinBlocks * kBlockThreads)). The wide variant with weights holds 32 elements a thread and
// takes up to 128 registers (one block): its running sums take much of an SM's shared memory anyway.
template <class Op, typename scalar_t, int kVec, int kPerThread, int kThreads, int kBlockThreads, int kMinBlocks,
          bool kWeightGrads, std::size_t... I>
__global__ void __launch_bounds__(kBlockThreads, kMinBlocks)
grad_rows_kernel(const Same<I, scalar_t>* __restrict__... in, GradOutputs<Op, scalar_t> out, int64_t rows, int64_t cols) {
  using acc_t = typename Op::template math_t<scalar_t>;
  constexpr int kSlots = kBlockThreads / kWarp;
  constexpr int kSums = kWeightGrads ? Op::kWeights : 0;
  __shared__ acc_t scratch[Op::kReductions > 0 ? Op::kReductions : 1][kSlots];
  const int threads = kThreads > 0 ? kThreads : static_cast<int>(blockDim.x);
  acc_t* const sums = reinterpret_cast<acc_t*>(grad_sums_memory);
  const int me = static_cast<int>(threadIdx.y * blockDim.x + threadIdx.x);
#pragma unroll
  for (int e = 0; e < kSums * kPerThread; ++e) {
    sums[me * sum_stride(kSums, kPerThread) + e] = acc_t(0);
  }
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.y;
  // `top` is the block's first row: the same for all its threads, so that all take every barrier.
  for (int64_t top = static_cast<int64_t>(blockIdx.x) * blockDim.y; top < rows; top += stride) {
    const int64_t row = top + threadIdx.y;
    grad_held_row<Op, scalar_t, kVec, kPerThread, kSlots, InBlock, kSums, I...>(
        in..., out, row * cols, 0, row < rows ? static_cast<int>(cols) : 0, cols, threads, &scratch[0][0], sums, me);
    if (threads > kWarp) {
      __syncthreads();  // the next row's reductions reuse `scratch`, which slower warps may still be reading
    }
  }
  const int64_t slot = static_cast<int64_t>(blockIdx.x) * blockDim.y + threadIdx.y;
  write_sums<Op, scalar_t, kVec, kPerThread, kSums>(out, sums, slot, 0, static_cast<int>(cols), cols, threads, me);
}

// The backward over rows split across a thread-block cluster (sm_90 and later; GradLaunch takes it for rows
// longer than kMaxRegisterCols that one block holds only in kWideThreads threads whose build spills, or not at
// all, and without weights only where two of its blocks share an SM). Block `rank` of
// a cluster holds columns [rank * chunk, rank * chunk + chunk) of the row in registers, as
// grad_rows_kernel holds a row, and every reduction is completed across the cluster (InCluster). Cluster c
// takes rows c, c + clusters, ...: each block keeps the running sums of its own columns, and writes them to
// row c of the partial sums, so that the slots are the clusters. Every element is read once and each
// gradient written once, where the multi-pass kernel reads the row once per reduction and again for the
// gradients, and each thread holds kPerThread elements at up to 128 registers (one 512-thread block an SM),
// where the 1024-thread build of grad_rows_kernel has 64 and spills a heavy derivative.
// The slots of `scratch` alternate between rows (two sets): a block writes a reduction's slot again two
// rows later, after a cluster barrier of the row between that every block passes only once it has read
// the slot's last value. (Every GradOp has a reduction: GradLaunch takes this kernel only then.)
template <class Op, typename scalar_t, int kVec, int kPerThread, std::size_t... I>
__global__ void __launch_bounds__(kMaxThreads, 1)
grad_cluster_rows_kernel(const Same<I, scalar_t>* __restrict__... in, GradOutputs<Op, scalar_t> out, int64_t rows, int64_t cols,
                         int chunk) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  namespace cg = cooperative_groups;
  using acc_t = typename Op::template math_t<scalar_t>;
  constexpr int kSlots = kMaxThreads / kWarp + 2;  // row_reduce's, then InCluster's
  constexpr int kSums = Op::kWeights;
  constexpr int kReductions = Op::kReductions > 0 ? Op::kReductions : 1;
  __shared__ acc_t scratch[2][kReductions][kSlots];
  const cg::cluster_group cluster = cg::this_cluster();
  const int threads = static_cast<int>(blockDim.x);
  const int64_t clusters = gridDim.x / cluster.num_blocks();
  const int64_t slot = blockIdx.x / cluster.num_blocks();
  const int64_t start = static_cast<int64_t>(cluster.block_rank()) * chunk;
  // (No std::min/max in device code: the oldest supported torch builds without --expt-relaxed-constexpr.)
  const int64_t left = cols - start;
  const int limit = static_cast<int>(left <= 0 ? 0 : (left < chunk ? left : chunk));
  acc_t* const sums = reinterpret_cast<acc_t*>(grad_sums_memory);
  const int me = static_cast<int>(threadIdx.x);
#pragma unroll
  for (int e = 0; e < kSums * kPerThread; ++e) {
    sums[me * sum_stride(kSums, kPerThread) + e] = acc_t(0);
  }
  int parity = 0;
  for (int64_t row = slot; row < rows; row += clusters) {
    grad_held_row<Op, scalar_t, kVec, kPerThread, kSlots, InCluster, kSums, I...>(
        (in + start)..., out, row * cols, start, limit, cols, threads, &scratch[parity][0][0], sums, me);
    parity ^= 1;
  }
  write_sums<Op, scalar_t, kVec, kPerThread, kSums>(out, sums, slot, start, limit, cols, threads, me);
  // No block exits while another may still read its slots.
  cluster.sync();
#else
  __trap();  // never launched: GradLaunch takes this kernel only where the device runs its sm_90 code
#endif
}

// The backward over rows longer than the register kernel takes (as long_rows_kernel): block b takes
// rows b, b + gridDim.x, ..., kGroupRows of them at a time when there are weights (one otherwise). For
// each row of a group it completes the reductions (one loop over the row per pass, as long_rows_kernel)
// and keeps them in shared memory (one row without weights: in registers, `held`, no barrier before its
// gradients); then one loop over the columns writes the group's input gradients
// and adds the group's weight contributions in registers, so that row b of each weight's buffer of
// partial sums is written once a group (at the block's first group, added to at the next ones), not
// read and written again at every row: at rows of 16384 a block takes about 8 rows, and the buffer's
// float32 traffic would otherwise outweigh a row of 2-byte inputs. The thread that owns a column adds
// its rows in row order, so the sums are bitwise reproducible. With weights the kernel keeps two blocks an SM
// (64 registers a thread): the group's running sums take registers that would otherwise leave one block an
// SM: on an H200 the two-block build takes 0.60-1.01x the time of one row at a time for backwards with
// weights at rows of 16384 and 65536, the one-block build 0.61-1.16x.
// Without weight gradients it gives ptxas no minimum of blocks (0 adds none): with a minimum of one, ptxas
// gives the same code up to 15 more registers a thread, half the blocks fit an SM, and it takes up to 1.28x the time.
template <class Op, typename scalar_t, int kVec, bool kWeightGrads, std::size_t... I>
__global__ void __launch_bounds__(kMaxThreads, kWeightGrads ? 2 : 0)
grad_long_rows_kernel(const Same<I, scalar_t>* __restrict__... in, GradOutputs<Op, scalar_t> out, int64_t rows,
                      int64_t cols) {
  using Step = Steps<Op, scalar_t, kVec>;
  using acc_t = typename Step::acc_t;
  using pack_t = typename Step::pack_t;
  constexpr int kSlots = kMaxThreads / kWarp;
  constexpr int kInputGrads = Op::kInputs - 1;
  constexpr int kGroupRows = kWeightGrads ? 8 : 1;
  constexpr int kStats = Op::kReductions + 1;  // the reductions, then the row length (a mean's divisor)
  __shared__ acc_t scratch[Op::kReductions > 0 ? Op::kReductions : 1][kSlots];
  __shared__ acc_t stats[kGroupRows][kStats];
  const int64_t stride = static_cast<int64_t>(blockDim.x) * kVec;
  const int64_t row_step = gridDim.x;
  for (int64_t first = blockIdx.x; first < rows; first += row_step * kGroupRows) {
    const int64_t left = (rows - first + row_step - 1) / row_step;
    const int group = kGroupRows == 1 ? 1 : static_cast<int>(left < kGroupRows ? left : kGroupRows);
    acc_t held[kStats];
    for (int g = 0; g < group; ++g) {
      acc_t r[kStats];
      r[Op::kReductions] = static_cast<acc_t>(cols);
      Step::template reduce_loaded<kSlots>(std::make_integer_sequence<int, pass_count<Op>()>{}, r, &scratch[0][0],
                                           (first + g * row_step) * cols, cols, in...);
      if constexpr (kGroupRows == 1) {
#pragma unroll
        for (int s = 0; s < kStats; ++s) {
          held[s] = r[s];
        }
      } else {
        if (threadIdx.x == 0) {
#pragma unroll
          for (int s = 0; s < kStats; ++s) {
            stats[g][s] = r[s];
          }
        }
        __syncthreads();  // the next row's reductions reuse `scratch`; the gradients below read `stats`
      }
    }
    for (int64_t col = static_cast<int64_t>(threadIdx.x) * kVec; col < cols; col += stride) {
      acc_t contribution[Op::kWeights > 0 ? Op::kWeights : 1][kVec];
#pragma unroll
      for (int j = 0; j < Op::kWeights; ++j) {
#pragma unroll
        for (int k = 0; k < kVec; ++k) {
          contribution[j][k] = acc_t(0);
        }
      }
      for (int g = 0; g < group; ++g) {
        const int64_t row_base = (first + g * row_step) * cols;
        acc_t r[kStats];
#pragma unroll
        for (int s = 0; s < kStats; ++s) {
          r[s] = kGroupRows == 1 ? held[s] : stats[g][s];
        }
        pack_t packs[Step::kColumns];
        Step::template load_columns<Step::kOutput>(packs, row_base, col, in...);
        pack_t result[kInputGrads];
#pragma unroll
        for (int k = 0; k < kVec; ++k) {
          acc_t v[Step::kValues];
          Step::template loaded_values<Step::kOutput>(v, packs, k, r);
          acc_t d[Step::kColumns - 1];
          Step::grads(v, r, d);
#pragma unroll
          for (int j = 0; j < kInputGrads; ++j) {
            result[j].v[k] = static_cast<scalar_t>(d[j]);
          }
#pragma unroll
          for (int j = 0; j < Op::kWeights; ++j) {
            contribution[j][k] += d[kInputGrads + j];
          }
        }
#pragma unroll
        for (int j = 0; j < kInputGrads; ++j) {
          if (out.input[j] != nullptr) {
            *reinterpret_cast<pack_t*>(out.input[j] + row_base + col) = result[j];
          }
        }
      }
      if constexpr (kWeightGrads) {
#pragma unroll
        for (int j = 0; j < Op::kWeights; ++j) {
          if (out.weight[j] != nullptr) {
            acc_t* sum = out.weight[j] + static_cast<int64_t>(blockIdx.x) * cols + col;
#pragma unroll
            for (int k = 0; k < kVec; ++k) {
              sum[k] = (first == blockIdx.x ? acc_t(0) : sum[k]) + contribution[j][k];
            }
          }
        }
      }
    }
    __syncthreads();  // the next group's reductions reuse `scratch` and overwrite `stats`
  }
}

// out[col] = the sum of partial[s * cols + col] over the slots s < slots: thread (x, y) of a block adds
// slots y, y + kSumThreadsY, ... of column x, then the block adds its kSumThreadsY sums pairwise. The
// order is fixed, so the result is bitwise reproducible.
constexpr int kSumThreadsX = 32;
constexpr int kSumThreadsY = 16;
template <typename acc_t, typename scalar_t>
__global__ void __launch_bounds__(kSumThreadsX * kSumThreadsY)
column_sum_kernel(const acc_t* __restrict__ partial, int64_t slots, int64_t cols, scalar_t* __restrict__ out) {
  __shared__ acc_t part[kSumThreadsY][kSumThreadsX + 1];
  for (int64_t left = static_cast<int64_t>(blockIdx.x) * kSumThreadsX; left < cols;
       left += static_cast<int64_t>(gridDim.x) * kSumThreadsX) {
    const int64_t col = left + threadIdx.x;
    acc_t total = acc_t(0);
    if (col < cols) {
      for (int64_t s = threadIdx.y; s < slots; s += kSumThreadsY) {
        total += partial[s * cols + col];
      }
    }
    part[threadIdx.y][threadIdx.x] = total;
    __syncthreads();
    for (int half = kSumThreadsY / 2; half > 0; half /= 2) {
      if (static_cast<int>(threadIdx.y) < half) {
        part[threadIdx.y][threadIdx.x] += part[threadIdx.y + half][threadIdx.x];
      }
      __syncthreads();
    }
    if (threadIdx.y == 0 && col < cols) {
      out[col] = static_cast<scalar_t>(part[0][threadIdx.x]);
    }
    __syncthreads();  // `part` is written again for the next columns
  }
}

// Resident threads per SM the kernels are built for: 64 registers each (__launch_bounds__).
constexpr int kThreadsPerSM = 2048;
// Shared memory a block may take without asking (cudaFuncAttributeMaxDynamicSharedMemorySize).
constexpr int64_t kDefaultSharedBytes = 48 * 1024;

// An attribute of the current device.
inline int64_t device_attribute(cudaDeviceAttr attribute) {
  int device = 0;
  STD_CUDA_CHECK(cudaGetDevice(&device));
  int value = 0;
  STD_CUDA_CHECK(cudaDeviceGetAttribute(&value, attribute, device));
  return value;
}

// An attribute the backward's launch reads at every call, asked once per device (a device's attributes do not
// change while the process runs): each cudaDeviceGetAttribute costs about a microsecond of host time, and a
// step at 2^24 elements is bound by the host.
template <cudaDeviceAttr kAttribute>
int64_t device_constant() {
  static PerDevice<int64_t> known;
  return known.get([] { return device_attribute(kAttribute); });
}

inline int64_t sm_count() { return device_constant<cudaDevAttrMultiProcessorCount>(); }
inline int64_t shared_bytes_optin() { return device_constant<cudaDevAttrMaxSharedMemoryPerBlockOptin>(); }

template <class Op, typename scalar_t, class Columns = std::make_index_sequence<Op::kInputs + Op::kWeights>>
struct GradLaunch;

template <class Op, typename scalar_t, std::size_t... I>
struct GradLaunch<Op, scalar_t, std::index_sequence<I...>> {
  using acc_t = typename Op::template math_t<scalar_t>;
  static constexpr int kInputGrads = Op::kInputs - 1;

  // A launch: the register kernel (threads per row, rows per block), its cluster build (blocks a row) or
  // the multi-pass one, and the blocks (for the cluster build, the clusters); the slots (rows of each
  // weight's partial sums) are blocks * rows per block.
  struct Shape {
    bool long_rows;
    int threads;
    int rows_per_block;
    int64_t blocks;
    int64_t sums_bytes;  // dynamic shared memory of a register-kernel block: the weights' running sums
    bool narrow;         // the narrow variant (kNarrowPerThread elements a thread)
    int cluster;         // the cluster build's blocks a row (grad_cluster_rows_kernel), 0 for the others
    int64_t slots() const { return blocks * rows_per_block; }
  };
  static constexpr int kVecAligned = kVectorBytes / sizeof(scalar_t);
  static constexpr bool kWeightGrads = Op::kWeights > 0;
  // Elements per thread and the longest row held in registers, as the forward's (per_thread() of this
  // op's columns: the output's gradient, the inputs); the same for the scalar path of misaligned rows.
  // With weights, the wide variant allows the row twice the registers (the kernel takes up to 128 a
  // thread), so that rows of 16384 stay in registers.
  static constexpr int kBudget = kWeightGrads ? 2 * kRowRegisters : kRowRegisters;
  static constexpr int kPerThread = per_thread<Op, scalar_t, kVecAligned, kBudget>();
  static constexpr int kMinBlocks = kWeightGrads ? 1 : 2;
  static constexpr int64_t kMaxCols = max_register_cols<Op, scalar_t, kVecAligned, kBudget>();
  // The narrow variant, for rows that fit kMaxThreads threads at kNarrowPerThread elements a thread (the
  // row in half the registers):
  //   * float32 and float64 with weights always take it where it fits (at half kRowRegisters and 64
  //     registers, up to 2048 threads an SM): on an H100, LayerNorm's and RMSNorm's backward in float32
  //     at rows of 1024 and 4096 reach 83-88% of a copy with 8 elements a thread, 60-81% with 32;
  //   * every op takes it where the wide build's code would outgrow the SM's instruction cache: Op::kCode
  //     instructions an element (kernelgen.cost.own_code), unrolled over kPerThread elements, past
  //     kGradCode. On an H100, a backward calling sin and cos twice each (kCode 418, 32 elements: 15500 PTX
  //     instructions, 7900 at 16) runs its float16/bfloat16 rows of 1024 and 4096 2.3x faster in the narrow
  //     build, neither spilling; one of kCode 425 at 16 elements (7800 instructions) runs 10% faster at
  //     1024 and 8% slower at 4096, so the budget lies between the two;
  //   * every other op takes it where the wide variant's build spills and the narrow one's spills less
  //     (takes_narrow): a backward's formula (the derivative of every step, a max's mask) can need
  //     more registers than the row leaves it. The narrow build keeps the wide one's register cap.
  static constexpr bool kAlwaysNarrow = kWeightGrads && sizeof(scalar_t) > 2;
  static constexpr int kNarrowPerThread =
      per_thread<Op, scalar_t, kVecAligned, kAlwaysNarrow ? kRowRegisters / 2 : kBudget / 2, kPerThread>();
  static constexpr int kNarrowMinBlocks = kAlwaysNarrow ? 2 : kMinBlocks;
  static constexpr bool kHasNarrow = kNarrowPerThread < kPerThread;

  // Bytes of shared memory a block of `block_threads` keeps the weights' running sums in (sum_stride a thread).
  static int64_t sums_bytes(int64_t block_threads, int per_thread) {
    return kWeightGrads ? int64_t{sum_stride(Op::kWeights, per_thread)} * block_threads * static_cast<int64_t>(sizeof(acc_t)) : 0;
  }

  using Kernel = void (*)(const Same<I, scalar_t>*..., GradOutputs<Op, scalar_t>, int64_t, int64_t);

  // Whether the kVec path holds rows of `threads` threads in registers. The scalar path (misaligned rows)
  // stops at kMaxThreads: a 1024-thread build would hold kPerThread scalars a thread beside the whole
  // derivative in 64 registers, which spills for a heavy formula and takes ptxas minutes to compile.
  // So does the 16-byte path where one block an SM serves the backward worse than the multi-pass kernel
  // (kWideHoldsBarriers, below): its kWideThreads build is then never compiled. Their longer rows take the
  // multi-pass kernel.
  template <int kVec>
  static constexpr bool holds(int threads) {
    return (kVec == kVecAligned && kWideHoldsBarriers) || threads <= kMaxThreads;
  }

  // The register kernel for rows of `threads` threads. float32/float64 fix the thread count at compile
  // time at kMaxThreads and kWideThreads, as the forward does.
  template <int kVec, int kPer, int kMin>
  static Kernel rows_kernel_for(int threads) {
    if constexpr (holds<kVec>(kWideThreads)) {
      if (threads == kWideThreads) {
        return grad_rows_kernel<Op, scalar_t, kVec, kPer, (sizeof(scalar_t) > 2 ? kWideThreads : 0), kWideThreads, 1,
                                kWeightGrads, I...>;
      }
    }
    if constexpr (sizeof(scalar_t) > 2) {
      if (threads == kMaxThreads) {
        return grad_rows_kernel<Op, scalar_t, kVec, kPer, kMaxThreads, kMaxThreads, kMin, kWeightGrads, I...>;
      }
    }
    return grad_rows_kernel<Op, scalar_t, kVec, kPer, 0, kMaxThreads, kMin, kWeightGrads, I...>;
  }
  template <int kVec>
  static Kernel rows_kernel_for(int threads, bool narrow) {
    if constexpr (kHasNarrow) {
      if (narrow) {  // at most kMaxThreads threads (shape)
        if constexpr (sizeof(scalar_t) > 2) {
          if (threads == kMaxThreads) {
            return grad_rows_kernel<Op, scalar_t, kVec, kNarrowPerThread, kMaxThreads, kMaxThreads, kNarrowMinBlocks,
                                    kWeightGrads, I...>;
          }
        }
        return grad_rows_kernel<Op, scalar_t, kVec, kNarrowPerThread, 0, kMaxThreads, kNarrowMinBlocks, kWeightGrads, I...>;
      }
    }
    return rows_kernel_for<kVec, kPerThread, kMinBlocks>(threads);
  }

  // Whether the wide build's unrolled code outgrows the instruction cache (above): more than kGradCode
  // instructions, twice the forward's cluster budget (kClusterCode, which counts arithmetic, not code).
  static constexpr int kGradCode = 2 * kClusterCode;
  static constexpr bool kWideCodeTooBig = int64_t{Op::kCode} * kPerThread > kGradCode;

  // Whether rows of `cols` (which fit the narrow variant) take it: always where kAlwaysNarrow or
  // kWideCodeTooBig, else where the wide variant's build spills and the narrow one's spills less
  // (spills_more). Asked once per device and thread count.
  static bool takes_narrow(int64_t cols) {
    if (kAlwaysNarrow || kWideCodeTooBig) {
      return true;
    }
    static PerDevice<bool, thread_count_index(kMaxThreads) + 1> known;
    const int threads = row_threads(cols, kNarrowPerThread, kWideThreads);
    return known.get(thread_count_index(threads), [&] {
      return spills_more(rows_kernel_for<kVecAligned>(row_threads(cols, kPerThread, kWideThreads), false),
                         rows_kernel_for<kVecAligned>(threads, true), 1);
    });
  }

  // The most static shared memory a register-kernel build takes (its reductions' scratch, at up to
  // kWideThreads / kWarp slots). A block's static and dynamic shared memory count together against the
  // limit: 48 KiB of running sums (three weights at 32 elements a thread, 128 threads) in a block that also
  // holds the scratch fails to launch unless the kernel asks for more.
  // (Or the cluster build's: two sets of kMaxThreads / kWarp + 2 slots.)
  static constexpr int64_t kStaticBytes = int64_t{Op::kReductions > 0 ? Op::kReductions : 1} *
                                          std::max(kWideThreads / kWarp, 2 * (kMaxThreads / kWarp + 2)) *
                                          static_cast<int64_t>(sizeof(acc_t));

  // The cluster build (grad_cluster_rows_kernel): a row split over the blocks of a thread-block cluster,
  // kMaxThreads threads a block at up to 128 registers a thread (one block an SM), each holding kClusterPerThread
  // elements (the row's values in 2 * kRowRegisters, as the wide build with weights), for the rows one block holds
  // only in kWideThreads threads where that build spills (64 registers a thread), and for rows too long for one
  // block, of at least kClusterMinCols either way. Built for the 16-byte path of the 2-byte types only: misaligned
  // rows, float32 and float64 keep the wide build or the multi-pass kernel. In float32 the cluster build holds the
  // elements of a 1024-thread row in one 512-thread block an SM, and on an H200 float32 backwards with weights take
  // 0.69-1.60x the time of the wide build or the multi-pass kernel in it at rows of 8192-65536, median 1.00: no
  // rule of the kernel's build tells the faster ones apart, so float32 spends no ptxas time on it. Without weights
  // the launch takes it only where two of its blocks share an SM (cluster_pays).
  // Taken only for a backward of at most kClusterReductions reductions: each pass of reductions waits for the
  // cluster's other blocks (a block barrier, then a cluster barrier), and on an H100 backwards of up to 6
  // reductions run up to 2.2x faster in the cluster build than in a spilling 1024-thread build, those of 9 up to
  // 1.45x slower. Counting passes instead of reductions (backwards of 7 to 10 reductions take 2 or 3 passes) runs
  // float32 rows of 16384 up to 1.7x faster but 2-byte rows of 16384 and 65536 1.2-2.2x slower, so the rule counts
  // reductions. Rows of 16384 run faster without the cluster build (kClusterMinCols).
  static constexpr int kClusterReductions = 6;
  static constexpr bool kHasCluster = Op::kReductions > 0 && Op::kReductions <= kClusterReductions && sizeof(scalar_t) == 2;
  static constexpr int kClusterPerThread = per_thread<Op, scalar_t, kVecAligned, 2 * kRowRegisters>();
  static constexpr int64_t kClusterBlockCols = int64_t{kClusterPerThread} * kMaxThreads;
  using ClusterKernel = void (*)(const Same<I, scalar_t>*..., GradOutputs<Op, scalar_t>, int64_t, int64_t, int);
  static ClusterKernel cluster_kernel() {
    return grad_cluster_rows_kernel<Op, scalar_t, kVecAligned, kClusterPerThread, I...>;
  }
  // The clusters of `blocks` blocks of the cluster build that the GPU holds at once with their running
  // sums: 0 where the device cannot run it (no sm_90 code in the binary, a GPU before Hopper, or no such
  // cluster fits). Asked once per device and cluster size.
  static int64_t resident_clusters(int blocks) {
    static PerDevice<int64_t, kMaxClusterBlocks + 1> known;
    return known.get(blocks, [&] {
      const ClusterKernel kernel = cluster_kernel();
      int clusters = 0;
      const int64_t bytes = sums_bytes(kMaxThreads, kClusterPerThread);
      if (bytes + kStaticBytes <= shared_bytes_optin()) {
        allow_shared(kernel, bytes);
        clusters = max_active_clusters(kernel, blocks, bytes);
      }
      return int64_t{clusters};
    });
  }

  // The shortest rows the cluster build takes: longer than kMaxRegisterCols (16384). Rows up to that length take
  // the register kernel (spills and all) or the multi-pass kernel, which reads a row again at every pass (at most
  // 32 KiB a column, largely from L2) in 512-thread blocks that share an SM, where the cluster build runs one
  // 512-thread block an SM that waits at a block barrier and a cluster barrier every pass. On an H200, bfloat16
  // backwards of 3-6 reductions, with and without weights, at rows of 8192 and 16384 take 0.47-0.89x the cluster
  // build's time without it in about half the cases, and are within 1.1% in the others. Longer rows keep the
  // cluster build, which holds the row on chip (without weights, see cluster_pays).
  static constexpr int64_t kClusterMinCols = kMaxRegisterCols + 1;

  // Whether the cluster build pays for rows that `resident` clusters of `blocks` blocks take at once. With
  // weights it does: the multi-pass kernel reads the row again at every pass and writes a slot of float32
  // partial sums for each of its blocks (two an SM: at 1024 rows of 65536, half the bytes of a 2-byte input), and
  // on an H200 the cluster build is faster for about two thirds of backwards with weights at 2-byte rows of
  // 32768-131072, by up to 2.7x (LayerNorm and RMSNorm at 131072), and slower for the others, by up to 1.8x.
  // Without weights, only where two of its blocks share an SM (more blocks resident than SMs), so that one
  // block's loads and arithmetic fill the other's waits at the barriers of each pass. With one block an SM
  // (builds of 71-128 registers a thread) the multi-pass kernel, whose 512-thread blocks share an SM, takes
  // 0.35-1.00x the cluster build's time for backwards without weights at those rows, mostly below 0.93x; a build
  // of 64 registers (x * tanh(max(x)), two blocks an SM) runs 1.23-1.34x faster in the cluster build, 51% -> 70%
  // of a copy.
  static bool cluster_pays(int64_t resident, int64_t blocks) {
    return kWeightGrads || resident * blocks > sm_count();
  }

  // The cluster build's launch for `rows` rows of `cols`, or none (cluster 0) where the row is shorter than
  // kClusterMinCols, takes more than kMaxClusterBlocks blocks, the device cannot run it, or it does not pay
  // (cluster_pays). With weights the clusters fill the GPU once, as the register kernel's blocks do; without,
  // one cluster a row.
  static Shape cluster_shape(int64_t rows, int64_t cols) {
    if constexpr (kHasCluster) {
      const int64_t blocks = (cols + kClusterBlockCols - 1) / kClusterBlockCols;
      if (cols >= kClusterMinCols && blocks >= 2 && blocks <= kMaxClusterBlocks) {
        const int64_t resident = resident_clusters(static_cast<int>(blocks));
        if (resident > 0 && cluster_pays(resident, blocks)) {
          const int64_t clusters = std::min(rows, kWeightGrads ? resident : kMaxBlocks / blocks);
          return {false, kMaxThreads, 1, std::max<int64_t>(1, clusters), sums_bytes(kMaxThreads, kClusterPerThread), false,
                  static_cast<int>(blocks)};
        }
      }
    }
    return {true, kMaxThreads, 1, 0, 0, false, 0};
  }

  // Whether rows of `cols`, which one block holds in kWideThreads threads, take the cluster build instead:
  // where the wide build spills more than the cluster build (by any amount: at 64 registers a thread a heavy
  // derivative's spills are stored and loaded again at every element of every row) and the row is at least
  // kClusterMinCols long (a build of 32 elements a thread holds rows of 32768). The 2-byte types only
  // (kHasCluster): on an H200 float32 backwards with weights run 1.13-1.9x faster in their wide build, spills
  // and all, than in the cluster build. Asked once per device.
  static bool cluster_over_wide(int64_t cols) {
    if constexpr (kHasCluster) {
      static PerDevice<bool> known;
      return known.get([] { return spills_more(rows_kernel_for<kVecAligned>(kWideThreads, false), cluster_kernel(), 1); }) &&
             cluster_shape(1, cols).cluster > 0;
    }
    return false;
  }

  // Whether rows that take kWideThreads threads (the wide build, one block an SM) stay in registers. Not for
  // a backward without weights of more than kClusterReductions reductions whose wide build holds one 16-byte
  // vector of each column a thread (kPerThread == kVecAligned: float32 rows of 4096, 2-byte rows of 8192):
  // there every warp of the SM waits at each pass's barrier, each with a single load of each column in
  // flight, and no other block fills the wait. The multi-pass kernel reads such a row again at every pass
  // (from L2 at these lengths), two vectors a thread, in 512-thread blocks that share an SM and overlap.
  // On an H200 such backwards of 7-8 reductions take 0.57-0.89x the wide build's time in the multi-pass kernel
  // (float32 and bfloat16). Where the wide build holds two vectors or more a thread, or the backward has weights
  // (whose multi-pass kernel adds its partial sums at every pass), the multi-pass kernel mostly takes 1.07-2.0x
  // the wide build's time; a wide build with weights that spills 316-484 bytes of loads runs 11-26% faster in
  // it, which no rule of the build tells apart yet.
  static constexpr bool kWideHoldsBarriers =
      kWeightGrads || kPerThread > kVecAligned || Op::kReductions <= kClusterReductions;

  // Lets `kernel` take `bytes` of dynamic shared memory (past 48 KiB in all a kernel must ask).
  template <class AnyKernel>
  static void allow_shared(AnyKernel kernel, int64_t bytes) {
    if (bytes + kStaticBytes > kDefaultSharedBytes) {
      STD_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(bytes)));
    }
  }

  // The blocks of the 16-byte register kernel of `threads` threads a row (the narrow build or not) that an SM
  // holds at once with `bytes` of running sums, at least 1: what the occupancy API answers, asked once per
  // device and build (the answer depends on nothing else), though the launch needs it up to three times a call.
  static int resident_blocks(int threads, int rows_per_block, bool narrow, int64_t bytes) {
    static PerDevice<int, 2 * (thread_count_index(kWideThreads) + 1)> known;
    return known.get(2 * thread_count_index(threads) + (narrow ? 1 : 0), [&] {
      const Kernel kernel = rows_kernel_for<kVecAligned>(threads, narrow);
      allow_shared(kernel, bytes);
      int per_sm = 0;
      STD_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, threads * rows_per_block,
                                                                   static_cast<size_t>(bytes)));
      return std::max(1, per_sm);
    });
  }

  // The launch for `rows` rows of `cols`. The register kernel when the row fits it and its weights'
  // running sums fit a block's shared memory, else the multi-pass kernel. With weights, the blocks fill
  // the GPU once (as many as its SMs hold at once: the occupancy of the 16-byte kernel, which the
  // scalar one, for misaligned rows, shares): each then takes several rows. Without, one block per
  // rows_per_block rows (up to kMaxBlocks; the kernel loops past).
  static Shape shape(int64_t rows, int64_t cols) {
    const int64_t sms = sm_count();
    if (cols <= kMaxCols && holds<kVecAligned>(row_threads(cols, kPerThread, kWideThreads))) {
      const bool narrow = kHasNarrow && cols <= int64_t{kNarrowPerThread} * kMaxThreads && takes_narrow(cols);
      const int threads = row_threads(cols, narrow ? kNarrowPerThread : kPerThread, kWideThreads);
      const int per_thread = narrow ? kNarrowPerThread : kPerThread;
      const int rows_per_block = std::max(1, kRowBlockThreads / threads);
      const int64_t bytes = sums_bytes(int64_t{threads} * rows_per_block, per_thread);
      if (threads > kMaxThreads && cluster_over_wide(cols)) {
        return cluster_shape(rows, cols);
      }
      if (bytes + kStaticBytes <= shared_bytes_optin()) {
        const int64_t needed = (rows + rows_per_block - 1) / rows_per_block;
        int64_t blocks = kMaxBlocks;
        if (kWeightGrads) {
          blocks = sms * resident_blocks(threads, rows_per_block, narrow, bytes);
        }
        return {false, threads, rows_per_block, std::max<int64_t>(1, std::min(needed, blocks)), bytes, narrow, 0};
      }
    }
    const Shape cluster = cluster_shape(rows, cols);
    if (cluster.cluster > 0) {
      return cluster;
    }
    const int64_t blocks = kWeightGrads ? sms * (kThreadsPerSM / kMaxThreads) : kMaxBlocks;
    return {true, kMaxThreads, 1, std::min(rows, blocks), 0, false, 0};
  }

  // The cluster build's launch (shape `s`). Returns false, launching nothing, where the launch reports that
  // the cluster does not fit after all (compute-sanitizer's instrumented kernels take more registers, for
  // one): the error is cleared, and the multi-pass kernel takes these rows in as many slots.
  static bool launch_cluster(const Shape& s, const Same<I, scalar_t>*... in, const GradOutputs<Op, scalar_t>& out, int64_t rows,
                             int64_t cols, cudaStream_t stream) {
    const ClusterKernel kernel = cluster_kernel();
    allow_shared(kernel, s.sums_bytes);
    const int chunk = static_cast<int>(cluster_chunk(cols, s.cluster, kVecAligned));
    cudaLaunchAttribute attribute{};
    cudaLaunchConfig_t config = cluster_launch(s.blocks, s.cluster, stream, attribute);
    config.dynamicSmemBytes = static_cast<size_t>(s.sums_bytes);
    const cudaError_t status = cudaLaunchKernelEx(&config, kernel, in..., out, rows, cols, chunk);
    if (status == cudaErrorInvalidClusterSize) {
      (void)cudaGetLastError();
      return false;
    }
    STD_CUDA_CHECK(status);
    STD_CUDA_KERNEL_LAUNCH_CHECK();
    return true;
  }

  // The rows of each weight's buffer of partial sums (see GradOutputs).
  static int64_t slots(int64_t rows, int64_t cols) { return shape(rows, cols).slots(); }

  template <int kVec>
  static void launch(const Same<I, scalar_t>*... in, const GradOutputs<Op, scalar_t>& out, int64_t rows, int64_t cols,
                     cudaStream_t stream) {
    const Shape s = shape(rows, cols);
    if constexpr (kVec == kVecAligned && kHasCluster) {
      if (s.cluster > 0 && launch_cluster(s, in..., out, rows, cols, stream)) {
        return;
      }
    }
    if (s.long_rows || s.cluster > 0 || !holds<kVec>(s.threads)) {
      // One block a slot: block b adds its rows' weight contributions into slot b. A shape of more than
      // kMaxThreads threads has one row a block, so its slots are its blocks, none more than the rows.
      static_assert(kRowBlockThreads <= kWideThreads, "a 1024-thread shape takes one row a block");
      grad_long_rows_kernel<Op, scalar_t, kVec, kWeightGrads, I...>
          <<<static_cast<unsigned int>(s.slots()), kMaxThreads, 0, stream>>>(in..., out, rows, cols);
    } else {
      const Kernel kernel = rows_kernel_for<kVec>(s.threads, s.narrow);
      allow_shared(kernel, s.sums_bytes);
      kernel<<<static_cast<unsigned int>(s.blocks), dim3(s.threads, s.rows_per_block), static_cast<size_t>(s.sums_bytes),
               stream>>>(in..., out, rows, cols);
    }
    STD_CUDA_KERNEL_LAUNCH_CHECK();  // a bad launch is reported here, not by a later CUDA call
  }

  // The gradients of `rows` rows of `cols` (in: the output's gradient, the inputs, the weights). grads:
  // the inputs' gradients (rows x cols), then the weights' (cols), null where not asked for. partial:
  // slots(rows, cols) x cols elements per weight whose gradient is asked for (in the order of the
  // weights), or null when none is.
  static void run(const Same<I, scalar_t>*... in, scalar_t* const* grads, acc_t* partial, int64_t rows, int64_t cols,
                  cudaStream_t stream) {
    GradOutputs<Op, scalar_t> out{};
    bool aligned = cols % kVecAligned == 0 && (is_aligned(in) && ...);
    for (int j = 0; j < kInputGrads; ++j) {
      out.input[j] = grads[j];
      aligned = aligned && (grads[j] == nullptr || is_aligned(grads[j]));
    }
    const int64_t slots = partial != nullptr ? shape(rows, cols).slots() : 0;
    for (int j = 0, k = 0; j < Op::kWeights; ++j) {
      out.weight[j] = partial != nullptr && grads[kInputGrads + j] != nullptr ? partial + (k++) * slots * cols : nullptr;
    }
    if (aligned) {
      launch<kVecAligned>(in..., out, rows, cols, stream);
    } else {
      launch<1>(in..., out, rows, cols, stream);
    }
    for (int j = 0; j < Op::kWeights; ++j) {
      if (out.weight[j] != nullptr) {
        const int64_t blocks = std::min<int64_t>((cols + kSumThreadsX - 1) / kSumThreadsX, kMaxBlocks);
        column_sum_kernel<acc_t, scalar_t><<<static_cast<unsigned int>(blocks), dim3(kSumThreadsX, kSumThreadsY), 0, stream>>>(
            out.weight[j], slots, cols, grads[kInputGrads + j]);
        STD_CUDA_KERNEL_LAUNCH_CHECK();
      }
    }
  }
};

}  // namespace
}  // namespace rowwise
}  // namespace kg
