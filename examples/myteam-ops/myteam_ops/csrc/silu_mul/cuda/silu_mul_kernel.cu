// silu_mul_kernel.cu: the CUDA kernel of myteam::silu_mul and its launcher.
// The tensor side (checks, device guard, allocation, stream, dtype dispatch, registration) is in
// silu_mul_cuda.cpp. This file sees raw pointers only and includes no tensor headers, stable or
// not: nvcc spends most of a build parsing ATen's (about 25 s of a 35 s compile), and the kernel
// needs none. Only header-only pieces of torch are used: the half types and the CUDA error checks.
//
// An elementwise op does a few flops per element and is limited by memory bandwidth, so the
// kernel's job is to keep the memory system busy. Each choice below holds on an H100:
//   * Vector loads and stores: 16 bytes (4 float32, 8 float16/bfloat16, 2 float64 elements) per
//     access, 8 bytes for light float32 ops of two or more inputs (see access_bytes). 2-byte accesses
//     cannot fill the memory pipe: a one-element-per-thread kernel loses about a quarter of the
//     bandwidth in bfloat16.
//   * Enough loads in flight: each thread issues all its loads (P packs of every input) before any
//     math. P (1, 2 or 4) is chosen at run time from what the compiled kernels need: registers and
//     occupancy from the CUDA occupancy API, the bytes each P keeps in flight, and how heavy the
//     expression's math is (see choose_packs below; over 40 varied expressions in every dtype this
//     rule picks the fastest P or one within 0.1% of it). On tensors that fill the GPU only a few
//     times over, one pack per thread keeps every SM busy instead.
//   * A grid that covers the whole tensor and no loop in the kernel: blocks sweep memory in order,
//     and a thread that runs once needs fewer registers (more resident warps). A grid of a few
//     waves with a grid-stride loop runs 4% slower (DRAM throughput 90% instead of 93% of peak):
//     long-lived blocks drift apart and scatter the addresses in flight.
//   * int64 indices: an `int` index overflows past 2^31 elements.
//   * A scalar path for the last n % kVec elements, and for inputs whose data pointer is not
//     aligned to the access (a view such as x[1:] starts 1 element into its storage).
// The formula itself is silu_mul_expr in ../silu_mul.h, shared with the CPU code.

#include <cuda_runtime_api.h>
// STD_CUDA_CHECK, STD_CUDA_KERNEL_LAUNCH_CHECK: C10_CUDA_CHECK's stable twins (the same messages,
// device-side assert hints included); they need -DUSE_CUDA, which _build.py sets.
#include <torch/csrc/stable/macros.h>
#include <torch/headeronly/util/BFloat16.h>
#include <torch/headeronly/util/Half.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <type_traits>

#include "../silu_mul.h"
#include "silu_mul_kernel.h"

namespace silu_mul {
namespace {

constexpr int kThreadsPerBlock = 256;
constexpr int kVectorBytes = 16;  // the widest load one thread can issue
constexpr int kInputs = 2;
// The most packs per input and thread: at most 8 loads per thread, so 4 for one or two inputs, 2 for
// three or four, 1 above. More only costs registers.
constexpr int kMaxPacks = kInputs <= 2 ? 4 : (kInputs <= 4 ? 2 : 1);
// The expression's cost, in float instructions per element (kernelgen's estimate: exp 10, sin 25,
// pow 40, a division 10, +-* 1, ...). Math is heavy when it costs at least kHeavyCostPerByte per
// byte the element moves: the kernel then runs out of instruction issue before it runs out of
// memory bandwidth, and more resident warps beat more bytes in flight (measured: a 1-input op with
// two sines and an rsqrt, 14 per byte in float16, ran at 0.89x of torch.compile with 4 packs and
// 1.01x with 2; a 2-input one with a sine and a cosine, 10 per byte, 0.86x with 4 and 0.99x with 1).
// kernelgen computed it from --expr: if you change the formula in ../silu_mul.h, re-estimate it
// (it only steers the launch shape, never the result).
constexpr int kMathCost = 22;
constexpr int kHeavyCostPerByte = 10;
// Light math (from kMemoryBoundCostPerByte up to kHeavyCostPerByte): the fewest packs that keep this
// many bytes of loads in flight per SM (Little's law, with the math's latency added to the memory's;
// 96 KB was the best of 64, 96 and 128 over the sweep).
constexpr int64_t kTargetBytesInFlightPerSm = 96 * 1024;
// ...with at least this many of the SM's 8 blocks of 256 threads resident, and for heavy math, the
// most packs that keep kHeavyMinBlocksPerSm resident (else the most that keep the best occupancy).
constexpr int kLightMinBlocksPerSm = 4;
constexpr int kHeavyMinBlocksPerSm = 6;
// float64 math costs kFloat64CostScale times its float estimate (an H100 issues double-precision math
// at half the float rate, and the double routines for tanh, erf, sin... are about twice as long), and
// very heavy float64 math (kVeryHeavyCostPerByte and up) takes at most 2 packs: a float64 op with six
// nested tanh (30 per byte) ran at 34% of a copy's bandwidth, compute-bound, and at 0.91x of
// torch.compile with 4 packs, 0.99x with 2 (H100, 2^28). Below it the heavy rule decides alone:
// erf(sigmoid(x + 0.5)) in float64 (10 per byte) ran at 0.93-0.97x with the cap's 2 packs and at
// 0.96-0.97x with the 4 the rule gives it (forced in one run: 0.85x with 1, 0.89x with 2, 0.90x with 4).
constexpr int kFloat64CostScale = 4;
constexpr int kHeavyMaxPacksFloat64 = 2;
constexpr int kVeryHeavyCostPerByte = 20;
// The expression's cost for scalar_t, and the bytes one element moves (every input read, the output
// written).
template <typename scalar_t>
constexpr int cost_of() {
  return kMathCost * (sizeof(scalar_t) == 8 ? kFloat64CostScale : 1);
}
template <typename scalar_t>
constexpr int bytes_per_element() {
  return (kInputs + 1) * static_cast<int>(sizeof(scalar_t));
}
// Memory-bound math, below kMemoryBoundCostPerByte per byte moved: one pack per thread, and the 2-
// and 4-pack kernels are not even compiled. At full occupancy (8 blocks of 256 threads) one pack of
// each input is at least 32 KB of loads in flight per SM (16 KB per input of 8-byte packs, 32 KB of
// 16-byte ones), above the ~20 KB Little's law asks at an H100's bandwidth and latency (3 TB/s over
// 132 SMs, ~800 ns); more packs only make threads longer and fewer. Measured over the sweep's 40 expressions with 1, 2 and 4 packs forced (H100, 2^28
// elements): every expression under 5 per byte ran fastest, or within 0.1% of it, with one pack in
// float32, float16 and bfloat16, and the 4 packs that the bytes-in-flight rule below gave 1- and
// 2-input ones ran 0.3-2% slower (x * 2.0 in float16: 0.983x of torch.compile with 4, 0.999x with 1).
// Above it, math between a thread's loads and its store leaves fewer loads in flight per warp, and
// more packs pay (a 1-input erf-GELU, 6 per byte in float16: 0.97x with 1 pack, 1.06x with 4).
constexpr int kMemoryBoundCostPerByte = 5;
template <typename scalar_t>
constexpr int packs_limit() {
  return cost_of<scalar_t>() < kMemoryBoundCostPerByte * bytes_per_element<scalar_t>() ? 1 : kMaxPacks;
}
// Bytes per access (one pack) for scalar_t: kVectorBytes, but 8 (2 elements) for float32 ops of two
// or more inputs with light math, below kNarrowAccessCostPerByte. Measured on an H100 at 2^28
// elements over the sweep's 40 expressions, 8 against 16 bytes (two runs each, the same machine):
// memory-bound float32 ops of 2 inputs ran 0.8-1.5% faster (max(a, b) - min(a, b): 0.993x of
// torch.compile with 16 bytes, 1.001x with 8), of 3-8 inputs -0.2% to +0.2%, and one input 3.6-6.7%
// slower (x * 2.0: 738 us against 713, in a same-run A/B). Heavier math wants the wider access: a
// 2-input pow (pow(abs(x) + 1, y * 0.5), 3.6 per byte by kernelgen's estimate) fell from 1.005x to 0.90x
// with 8 bytes. torch.compile's float32 kernels move 8 bytes per thread and input too. The half types
// and float64 keep 16 bytes: with them they ran at or above torch.compile over the sweep.
constexpr int kNarrowAccessCostPerByte = 3;
template <typename scalar_t>
constexpr int access_bytes() {
  const bool narrow = sizeof(scalar_t) == 4 && kInputs >= 2 &&
                      cost_of<scalar_t>() < kNarrowAccessCostPerByte * bytes_per_element<scalar_t>();
  return narrow ? 8 : kVectorBytes;
}
// More than one pack per thread only when the grid is then still at least this many times the
// threads the GPU holds at once. Fewer, longer blocks leave SMs idle at the end of a shallow grid
// (and on small tensors, idle from the start).
constexpr int64_t kMinWavesForPacks = 4;
// At least this many blocks resident per SM: __launch_bounds__ then caps registers at
// 65536 / (4 * 256) = 64 per thread, so that at least half of the SM's thread slots hold warps
// whose loads are in flight. (Uncapped, a 4-input bfloat16 op used 159 registers: one block per SM.)
constexpr int kMinBlocksPerSm = 4;
// Ops of 5 or more inputs run one pack per thread, and 7 or 8 bfloat16 inputs can need more than
// those 64 registers (every input's pack is widened to float, with bit operations, before the math).
// For them a second kernel allows 65536 / (3 * 256) = 85, and runs when the capped one reached the
// cap or spilled. Measured on an H100 at 2^28 over the sweep's 14 ops of 5-8 inputs: in bfloat16 six
// ops at the cap ran 3-11% faster with it (the worst of them had been at 0.90x of torch.compile), two
// 1-3% slower; in float16 none gained and three lost 2-3.5%, so only bfloat16 switches.
constexpr int kWideMinBlocksPerSm = 3;
// The hardware limit on gridDim.x. launch_packs splits a tensor that would need more blocks
// (over 2^39 elements) into several launches.
constexpr int64_t kMaxBlocks = 2147483647;

// kVec elements moved as one access of access_bytes(). alignas makes the compiler emit a single
// ld.global.v4 / st.global.v4 (v2 for 8 bytes of float32) for the whole struct.
template <typename scalar_t, int kVec>
struct alignas(sizeof(scalar_t) * kVec) Pack {
  scalar_t v[kVec];
};

// out[i] = silu_mul_expr(inputs[i]) for i in [0, n). Block b covers packs
// [b * kPacksPerBlock, (b + 1) * kPacksPerBlock); its thread t takes packs t, t + 256, ..., so a warp
// reads one contiguous 512-byte span per input and pack (coalesced). Block 0 also does the last
// n % kVec elements, one per thread.
template <typename scalar_t, int kVec, int kPacks, int kBlocksPerSm = kMinBlocksPerSm>
__global__ void __launch_bounds__(kThreadsPerBlock, kBlocksPerSm)
silu_mul_kernel(const scalar_t* __restrict__ x, const scalar_t* __restrict__ y, scalar_t* __restrict__ out, int64_t n) {
  // float16 and bfloat16 compute in opmath::fast_float: float with the fast division and exp that
  // their rounding hides (opmath.h says how small the errors are, and what it gained).
  using acc_t = opmath::kernel_math_type<scalar_t, opmath::opmath_type<scalar_t>>;
  using pack_t = Pack<scalar_t, kVec>;
  constexpr int64_t kPacksPerBlock = int64_t{kThreadsPerBlock} * kPacks;
  const int64_t n_packs = n / kVec;
  const int64_t first = static_cast<int64_t>(blockIdx.x) * kPacksPerBlock + threadIdx.x;

  // All loads first, so that they are in flight together; then the math and the stores.
  pack_t x_in[kPacks];
  pack_t y_in[kPacks];
#pragma unroll
  for (int u = 0; u < kPacks; ++u) {
    const int64_t p = first + u * kThreadsPerBlock;
    if (p < n_packs) {
      x_in[u] = reinterpret_cast<const pack_t*>(x)[p];
      y_in[u] = reinterpret_cast<const pack_t*>(y)[p];
    }
  }
#pragma unroll
  for (int u = 0; u < kPacks; ++u) {
    const int64_t p = first + u * kThreadsPerBlock;
    if (p < n_packs) {
      pack_t result;
#pragma unroll
      for (int k = 0; k < kVec; ++k) {
        result.v[k] = static_cast<scalar_t>(silu_mul_expr<acc_t>(
            static_cast<acc_t>(x_in[u].v[k]), static_cast<acc_t>(y_in[u].v[k])));
      }
      reinterpret_cast<pack_t*>(out)[p] = result;
    }
  }

  // Tail: the last n % kVec elements (fewer than 8), one per thread of block 0; none when kVec == 1.
  const int64_t i = n_packs * kVec + threadIdx.x;
  if (blockIdx.x == 0 && i < n) {
    out[i] = static_cast<scalar_t>(silu_mul_expr<acc_t>(
        static_cast<acc_t>(x[i]), static_cast<acc_t>(y[i])));
  }
}

template <int kBytes>
bool is_aligned(const void* ptr) {
  return reinterpret_cast<std::uintptr_t>(ptr) % kBytes == 0;
}

// Threads the current GPU holds at once (132 SMs x 2048 on an H100).
int64_t resident_threads() {
  int device = 0;
  int sms = 0;
  int threads_per_sm = 0;
  STD_CUDA_CHECK(cudaGetDevice(&device));
  STD_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
  STD_CUDA_CHECK(cudaDeviceGetAttribute(&threads_per_sm, cudaDevAttrMaxThreadsPerMultiProcessor, device));
  return int64_t{sms} * threads_per_sm;
}

template <typename scalar_t, int kVec, int kPacks, int kBlocksPerSm = kMinBlocksPerSm>
void launch_packs(const scalar_t* x, const scalar_t* y, scalar_t* out, int64_t n, cudaStream_t stream) {
  constexpr int64_t kElementsPerBlock = int64_t{kThreadsPerBlock} * kPacks * kVec;
  // A multiple of kVec, so every launch but the last gets whole, still aligned, packs.
  constexpr int64_t kMaxElementsPerLaunch = (kMaxBlocks - 1) * kElementsPerBlock;
  for (int64_t start = 0; start < n; start += kMaxElementsPerLaunch) {
    const int64_t count = std::min(n - start, kMaxElementsPerLaunch);
    // Enough blocks for the whole packs; at least one, which also covers a tensor of only a tail.
    const int64_t blocks = std::max<int64_t>(1, (count / kVec * kVec + kElementsPerBlock - 1) / kElementsPerBlock);
    silu_mul_kernel<scalar_t, kVec, kPacks, kBlocksPerSm><<<static_cast<unsigned int>(blocks), kThreadsPerBlock, 0, stream>>>(
        x + start, y + start, out + start, count);
    // Kernel launches are asynchronous: a bad launch configuration is only reported by the next
    // CUDA call, far from its cause, unless it is checked right here.
    STD_CUDA_KERNEL_LAUNCH_CHECK();
  }
}

// The packs per thread for this dtype on the current GPU (see kMaxPacks .. kMinWavesForPacks). A
// kernel that spills (more local memory than the one-pack kernel) is not a candidate beyond one pack:
// 4-pack kernels that spill 54-300 bytes run at 0.42-0.78x of torch.compile. A kernel at exactly the
// register cap without a spill stays a candidate: such 2-pack bfloat16 kernels run at 1.00x, where one
// pack gives 0.95x. Computed once per device and dtype.
constexpr int kWide = -1;  // choose_packs: one pack per thread, the kWideMinBlocksPerSm kernel

template <typename scalar_t, int kVec>
int choose_packs() {
  constexpr int kMaxDevices = 64;
  static std::atomic<int> chosen[kMaxDevices];
  int device = 0;
  STD_CUDA_CHECK(cudaGetDevice(&device));
  if (device < kMaxDevices) {
    if (const int known = chosen[device].load(std::memory_order_relaxed)) {
      return known;
    }
  }
  struct Option {
    int packs;
    int blocks;  // resident blocks per SM
    int64_t bytes_in_flight;  // per SM
  };
  Option options[3];
  int count = 0;
  bool one_pack_starved = false;
  size_t one_pack_local = 0;
  const auto consider = [&](const void* kernel, int packs) {
    cudaFuncAttributes attributes;
    STD_CUDA_CHECK(cudaFuncGetAttributes(&attributes, kernel));
    int blocks = 0;
    STD_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, kernel, kThreadsPerBlock, 0));
    if (packs == 1) {
      // The one-pack kernel: at the register cap or using local memory, bfloat16 ops of 5+ inputs
      // take the 85-register twin (below). Its local memory is the baseline of the spill test:
      // sinf/cosf keep a 32-byte array for huge arguments in every variant, which is no spill.
      one_pack_starved = attributes.numRegs * kThreadsPerBlock * kMinBlocksPerSm >= 65536 || attributes.localSizeBytes > 0;
      one_pack_local = attributes.localSizeBytes;
    }
    // More packs only when the kernel does not spill (more local memory than one pack needs). Reaching
    // the 64-register cap without spilling is fine: a bfloat16 op whose 2-pack kernel used exactly 64
    // registers ran at 1.00x of torch.compile with 2 packs and 0.95x with 1 (H100, 2^28 elements).
    const bool spills = attributes.localSizeBytes > one_pack_local;
    if (packs == 1 || !spills) {
      options[count++] = {packs, blocks, int64_t{blocks} * kThreadsPerBlock * packs * kInputs * kVec * static_cast<int>(sizeof(scalar_t))};
    }
  };
  consider(reinterpret_cast<const void*>(&silu_mul_kernel<scalar_t, kVec, 1>), 1);
  if constexpr (packs_limit<scalar_t>() >= 2) {
    consider(reinterpret_cast<const void*>(&silu_mul_kernel<scalar_t, kVec, 2>), 2);
  }
  if constexpr (packs_limit<scalar_t>() >= 4) {
    consider(reinterpret_cast<const void*>(&silu_mul_kernel<scalar_t, kVec, 4>), 4);
  }
  constexpr bool kHeavy = cost_of<scalar_t>() >= kHeavyCostPerByte * bytes_per_element<scalar_t>();
  constexpr bool kCappedFloat64 =
      sizeof(scalar_t) == 8 && cost_of<scalar_t>() >= kVeryHeavyCostPerByte * bytes_per_element<scalar_t>();
  int packs = 0;
  if (kHeavy) {
    int best_blocks = 0;
    for (int i = 0; i < count; ++i) {
      best_blocks = std::max(best_blocks, options[i].blocks);
    }
    for (int i = 0; i < count; ++i) {  // options are in increasing packs: the last match wins
      if (kCappedFloat64 && options[i].packs > kHeavyMaxPacksFloat64) {
        continue;
      }
      if (options[i].blocks >= std::min(kHeavyMinBlocksPerSm, best_blocks)) {
        packs = options[i].packs;
      }
    }
  } else {
    const Option* most = nullptr;
    for (int i = 0; i < count && packs == 0; ++i) {
      if (options[i].blocks < kLightMinBlocksPerSm && i > 0) {
        continue;
      }
      if (options[i].bytes_in_flight >= kTargetBytesInFlightPerSm) {
        packs = options[i].packs;
      } else if (most == nullptr || options[i].bytes_in_flight > most->bytes_in_flight) {
        most = &options[i];
      }
    }
    if (packs == 0) {
      packs = most->packs;
    }
  }
  if (kMaxPacks == 1 && one_pack_starved && std::is_same_v<scalar_t, torch::headeronly::BFloat16>) {
    packs = kWide;
  }
  if (device < kMaxDevices) {
    chosen[device].store(packs, std::memory_order_relaxed);
  }
  return packs;
}

template <typename scalar_t, int kVec>
void launch_vec(const scalar_t* x, const scalar_t* y, scalar_t* out, int64_t n, cudaStream_t stream) {
  const int packs = choose_packs<scalar_t, kVec>();
  if constexpr (kMaxPacks == 1) {
    if (packs == kWide) {
      launch_packs<scalar_t, kVec, 1, kWideMinBlocksPerSm>(x, y, out, n, stream);
      return;
    }
  }
  const int64_t waves = kMinWavesForPacks * resident_threads();
  if constexpr (packs_limit<scalar_t>() >= 4) {
    if (packs >= 4 && n / kVec / 4 >= waves) {
      launch_packs<scalar_t, kVec, 4>(x, y, out, n, stream);
      return;
    }
  }
  if constexpr (packs_limit<scalar_t>() >= 2) {
    if (packs >= 2 && n / kVec / 2 >= waves) {
      launch_packs<scalar_t, kVec, 2>(x, y, out, n, stream);
      return;
    }
  }
  launch_packs<scalar_t, kVec, 1>(x, y, out, n, stream);
}

}  // namespace

template <typename scalar_t>
void launch_silu_mul(const scalar_t* x, const scalar_t* y, scalar_t* out, int64_t n, cudaStream_t stream) {
  constexpr int kBytes = access_bytes<scalar_t>();
  constexpr int kVec = kBytes / sizeof(scalar_t);
  if (is_aligned<kBytes>(x) && is_aligned<kBytes>(y) && is_aligned<kBytes>(out)) {
    launch_vec<scalar_t, kVec>(x, y, out, n, stream);
  } else {
    // Misaligned views: one element per access and one pack per thread (a slow path that exists
    // for correctness; copy the input to an aligned tensor if it is hot).
    launch_packs<scalar_t, 1, 1>(x, y, out, n, stream);
  }
}

// One instantiation per supported dtype; silu_mul_cuda.cpp calls them from its dtype dispatch.
template void launch_silu_mul<float>(const float*, const float*, float*, int64_t, cudaStream_t);
template void launch_silu_mul<double>(const double*, const double*, double*, int64_t, cudaStream_t);
template void launch_silu_mul<torch::headeronly::Half>(const torch::headeronly::Half*, const torch::headeronly::Half*, torch::headeronly::Half*, int64_t, cudaStream_t);
template void launch_silu_mul<torch::headeronly::BFloat16>(const torch::headeronly::BFloat16*, const torch::headeronly::BFloat16*, torch::headeronly::BFloat16*, int64_t, cudaStream_t);

}  // namespace silu_mul
