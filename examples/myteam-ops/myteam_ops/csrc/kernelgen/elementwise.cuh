#pragma once
// kernelgen/elementwise.cuh: the machinery every elementwise op of this package shares: the kernel,
// its launch, and the rules that pick the launch shape. An op's own file (csrc/<op>/cuda/<op>_kernel.cu)
// holds only what is particular to it: its formula (an `Op` struct) and one instantiation per dtype.
//
// An elementwise op does a few flops per element and is limited by memory bandwidth, so the kernel's
// job is to keep the memory system busy. Each choice below holds on an H100:
//   * Vector loads and stores: 16 bytes (4 float32, 8 float16/bfloat16, 2 float64 elements) per
//     access, 8 bytes for light float32 ops of two or more inputs (access_bytes). 2-byte accesses
//     cannot fill the memory pipe: a one-element-per-thread kernel loses about a quarter of the
//     bandwidth in bfloat16.
//   * Enough loads in flight: each thread issues all its loads (P packs of every input) before any
//     math. P (1, 2 or 4) is chosen at run time from what the compiled kernels need: registers and
//     occupancy from the CUDA occupancy API, the bytes each P keeps in flight, and how heavy the
//     op's math is (choose_packs; over 40 varied expressions in every dtype this rule picks the
//     fastest P or one within 0.1% of it). On tensors that fill the GPU only a few times over, one
//     pack per thread keeps every SM busy instead.
//   * A grid that covers the whole tensor and no loop in the kernel: blocks sweep memory in order,
//     and a thread that runs once needs fewer registers (more resident warps). A grid of a few
//     waves with a grid-stride loop runs 4% slower (DRAM throughput 90% instead of 93% of peak):
//     long-lived blocks drift apart and scatter the addresses in flight.
//   * int64 indices: an `int` index overflows past 2^31 elements.
//   * A scalar path for the last n % kVec elements, and for inputs whose data pointer is not
//     aligned to the access (a view such as x[1:] starts 1 element into its storage).
//
// An op is a struct with kInputs (its number of inputs), kMathCost (its cost in float instructions
// per element) and `template <typename acc_t> static acc_t apply(acc_t...)` (the formula). Everything
// here is in an anonymous namespace: each op's kernel file compiles its own copy, as if written there.

#include <cuda_runtime_api.h>
// STD_CUDA_CHECK, STD_CUDA_KERNEL_LAUNCH_CHECK: C10_CUDA_CHECK's stable twins (the same messages,
// device-side assert hints included); they need -DUSE_CUDA, which _build.py sets.
#include <torch/csrc/stable/macros.h>
#include <torch/headeronly/util/BFloat16.h>
#include <torch/headeronly/util/Half.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <type_traits>
#include <utility>

#include "../opmath.h"
#include "per_device.cuh"

namespace kg {
namespace elementwise {
namespace {

constexpr int kThreadsPerBlock = 256;
constexpr int kVectorBytes = 16;  // the widest load one thread can issue

// The most packs per input and thread: at most 8 loads per thread, so 4 for one or two inputs, 2 for
// three or four, 1 above. More only costs registers.
template <class Op>
constexpr int max_packs() {
  return Op::kInputs <= 2 ? 4 : (Op::kInputs <= 4 ? 2 : 1);
}
// Math is heavy when it costs at least kHeavyCostPerByte per byte an element moves: the kernel then
// runs out of instruction issue before it runs out of memory bandwidth, and more resident warps beat
// more bytes in flight (a 1-input op with two sines and an rsqrt, 14 per byte in float16, runs at
// 0.89x of torch.compile with 4 packs and 1.01x with 2).
constexpr int kHeavyCostPerByte = 10;
// Light math (from kMemoryBoundCostPerByte up to kHeavyCostPerByte): the fewest packs that keep this
// many bytes of loads in flight per SM (Little's law, with the math's latency added to the memory's;
// 96 KB is the best of 64, 96 and 128).
constexpr int64_t kTargetBytesInFlightPerSm = 96 * 1024;
// ...with at least this many of the SM's 8 blocks of 256 threads resident, and for heavy math, the
// most packs that keep kHeavyMinBlocksPerSm resident (else the most that keep the best occupancy).
constexpr int kLightMinBlocksPerSm = 4;
constexpr int kHeavyMinBlocksPerSm = 6;
// float64 math costs kFloat64CostScale times its float estimate (an H100 issues double-precision math
// at half the float rate, and the double routines for tanh, erf, sin... are about twice as long), and
// very heavy float64 math (kVeryHeavyCostPerByte and up) takes at most 2 packs: it is compute-bound
// (a float64 op with six nested tanh runs at 0.91x of torch.compile with 4 packs, 0.99x with 2).
constexpr int kFloat64CostScale = 4;
constexpr int kHeavyMaxPacksFloat64 = 2;
constexpr int kVeryHeavyCostPerByte = 20;
// The op's cost for scalar_t, and the bytes one element moves (every input read, the output written).
template <class Op, typename scalar_t>
constexpr int cost_of() {
  return Op::kMathCost * (sizeof(scalar_t) == 8 ? kFloat64CostScale : 1);
}
template <class Op, typename scalar_t>
constexpr int bytes_per_element() {
  return (Op::kInputs + 1) * static_cast<int>(sizeof(scalar_t));
}
// Memory-bound math, below kMemoryBoundCostPerByte per byte moved: one pack per thread, and the 2-
// and 4-pack kernels are not even compiled. At full occupancy one pack of each input is at least
// 32 KB of loads in flight per SM, above the ~20 KB Little's law asks at an H100's bandwidth and
// latency (3 TB/s over 132 SMs, ~800 ns); more packs only make threads longer and fewer (1- and
// 2-input ops lose 0.3-2% with 4). Above it, math between a thread's loads and its store leaves
// fewer loads in flight per warp, and more packs pay (a 1-input erf-GELU, 6 per byte in float16:
// 0.97x with 1 pack, 1.06x with 4).
constexpr int kMemoryBoundCostPerByte = 5;
template <class Op, typename scalar_t>
constexpr int packs_limit() {
  return cost_of<Op, scalar_t>() < kMemoryBoundCostPerByte * bytes_per_element<Op, scalar_t>() ? 1 : max_packs<Op>();
}
// Bytes per access (one pack) for scalar_t: kVectorBytes, but 8 (2 elements) for float32 ops of two
// or more inputs with light math, below kNarrowAccessCostPerByte. Memory-bound float32 ops of 2
// inputs run 0.8-1.5% faster with 8 bytes, of 3-8 inputs the same, and of one input 3.6-6.7% slower;
// heavier math wants the wider access (a 2-input pow: 1.005x of torch.compile with 16 bytes, 0.90x
// with 8). torch.compile's float32 kernels move 8 bytes per thread and input too. The half types
// and float64 keep 16 bytes.
constexpr int kNarrowAccessCostPerByte = 3;
template <class Op, typename scalar_t>
constexpr int access_bytes() {
  const bool narrow = sizeof(scalar_t) == 4 && Op::kInputs >= 2 &&
                      cost_of<Op, scalar_t>() < kNarrowAccessCostPerByte * bytes_per_element<Op, scalar_t>();
  return narrow ? 8 : kVectorBytes;
}
// More than one pack per thread only when the grid is then still at least this many times the
// threads the GPU holds at once. Fewer, longer blocks leave SMs idle at the end of a shallow grid
// (and on small tensors, idle from the start).
constexpr int64_t kMinWavesForPacks = 4;
// At least this many blocks resident per SM: __launch_bounds__ then caps registers at
// 65536 / (4 * 256) = 64 per thread, so that at least half of the SM's thread slots hold warps
// whose loads are in flight. (Uncapped, a 4-input bfloat16 op uses 159 registers: one block per SM.)
constexpr int kMinBlocksPerSm = 4;
// Ops of 5 or more inputs run one pack per thread, and 7 or 8 bfloat16 inputs can need more than
// those 64 registers (every input's pack is widened to float, with bit operations, before the math).
// For them a second kernel allows 65536 / (3 * 256) = 85, and runs when the capped one reaches the
// cap or spills: bfloat16 ops at the cap run 3-11% faster with it. float16 ones gain nothing, so
// only bfloat16 switches.
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

// One input pointer per index of the pack I... (every input has the op's dtype).
template <std::size_t, typename T>
using Same = T;

// out[i] = Op::apply(inputs[i]) for i in [0, n). Block b covers packs
// [b * kPacksPerBlock, (b + 1) * kPacksPerBlock); its thread t takes packs t, t + 256, ..., so a warp
// reads one contiguous 512-byte span per input and pack (coalesced). Block 0 also does the last
// n % kVec elements, one per thread. __restrict__: no input aliases the output, so the loads may take
// the read-only path.
template <class Op, typename scalar_t, int kVec, int kPacks, int kBlocksPerSm, std::size_t... I>
__global__ void __launch_bounds__(kThreadsPerBlock, kBlocksPerSm)
kernel(const Same<I, scalar_t>* __restrict__... in, scalar_t* __restrict__ out, int64_t n) {
  // float16 and bfloat16 compute in opmath::fast_float: float with the fast division and exp that
  // their rounding hides (opmath.h says how small the errors are).
  using acc_t = opmath::kernel_math_type<scalar_t, opmath::opmath_type<scalar_t>>;
  using pack_t = Pack<scalar_t, kVec>;
  constexpr int64_t kPacksPerBlock = int64_t{kThreadsPerBlock} * kPacks;
  const int64_t n_packs = n / kVec;
  const int64_t first = static_cast<int64_t>(blockIdx.x) * kPacksPerBlock + threadIdx.x;

  // All loads first, so that they are in flight together; then the math and the stores.
  pack_t loaded[sizeof...(I)][kPacks];
#pragma unroll
  for (int u = 0; u < kPacks; ++u) {
    const int64_t p = first + u * kThreadsPerBlock;
    if (p < n_packs) {
      ((loaded[I][u] = reinterpret_cast<const pack_t*>(in)[p]), ...);
    }
  }
#pragma unroll
  for (int u = 0; u < kPacks; ++u) {
    const int64_t p = first + u * kThreadsPerBlock;
    if (p < n_packs) {
      pack_t result;
#pragma unroll
      for (int k = 0; k < kVec; ++k) {
        result.v[k] = static_cast<scalar_t>(Op::template apply<acc_t>(static_cast<acc_t>(loaded[I][u].v[k])...));
      }
      reinterpret_cast<pack_t*>(out)[p] = result;
    }
  }

  // Tail: the last n % kVec elements (fewer than 8), one per thread of block 0; none when kVec == 1.
  const int64_t i = n_packs * kVec + threadIdx.x;
  if (blockIdx.x == 0 && i < n) {
    out[i] = static_cast<scalar_t>(Op::template apply<acc_t>(static_cast<acc_t>(in[i])...));
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

constexpr int kWide = -1;  // choose_packs: one pack per thread, the kWideMinBlocksPerSm kernel

// The launch of one op for one dtype, over the index pack of its inputs.
template <class Op, typename scalar_t, class Inputs = std::make_index_sequence<Op::kInputs>>
struct Launch;

template <class Op, typename scalar_t, std::size_t... I>
struct Launch<Op, scalar_t, std::index_sequence<I...>> {
  template <int kVec, int kPacks, int kBlocksPerSm = kMinBlocksPerSm>
  static void packs(const Same<I, scalar_t>*... in, scalar_t* out, int64_t n, cudaStream_t stream) {
    constexpr int64_t kElementsPerBlock = int64_t{kThreadsPerBlock} * kPacks * kVec;
    // A multiple of kVec, so every launch but the last gets whole, still aligned, packs.
    constexpr int64_t kMaxElementsPerLaunch = (kMaxBlocks - 1) * kElementsPerBlock;
    for (int64_t start = 0; start < n; start += kMaxElementsPerLaunch) {
      const int64_t count = std::min(n - start, kMaxElementsPerLaunch);
      // Enough blocks for the whole packs; at least one, which also covers a tensor of only a tail.
      const int64_t blocks = std::max<int64_t>(1, (count / kVec * kVec + kElementsPerBlock - 1) / kElementsPerBlock);
      kernel<Op, scalar_t, kVec, kPacks, kBlocksPerSm, I...><<<static_cast<unsigned int>(blocks), kThreadsPerBlock, 0, stream>>>(
          (in + start)..., out + start, count);
      // Kernel launches are asynchronous: a bad launch configuration is only reported by the next
      // CUDA call, far from its cause, unless it is checked right here.
      STD_CUDA_KERNEL_LAUNCH_CHECK();
    }
  }

  // The packs per thread for this dtype on the current GPU (see max_packs .. kMinWavesForPacks). A
  // kernel that spills (more local memory than the one-pack kernel) is not a candidate beyond one
  // pack: 4-pack kernels that spill 54-300 bytes run at 0.42-0.78x of torch.compile. A kernel at
  // exactly the register cap without a spill stays a candidate: such 2-pack bfloat16 kernels run at
  // 1.00x, where one pack gives 0.95x. Computed once per device and dtype.
  template <int kVec>
  static int choose_packs() {
    static PerDevice<int> chosen;
    return chosen.get([] { return rank_packs<kVec>(); });
  }

  // choose_packs' answer, from the runtime's: registers, spills and occupancy of each build.
  template <int kVec>
  static int rank_packs() {
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
        // take the 85-register twin. Its local memory is the baseline of the spill test: sinf/cosf
        // keep a 32-byte array for huge arguments in every variant, which is no spill.
        one_pack_starved = attributes.numRegs * kThreadsPerBlock * kMinBlocksPerSm >= 65536 || attributes.localSizeBytes > 0;
        one_pack_local = attributes.localSizeBytes;
      }
      const bool spills = attributes.localSizeBytes > one_pack_local;
      if (packs == 1 || !spills) {
        options[count++] = {packs, blocks, int64_t{blocks} * kThreadsPerBlock * packs * Op::kInputs * kVec * static_cast<int>(sizeof(scalar_t))};
      }
    };
    consider(reinterpret_cast<const void*>(&kernel<Op, scalar_t, kVec, 1, kMinBlocksPerSm, I...>), 1);
    if constexpr (packs_limit<Op, scalar_t>() >= 2) {
      consider(reinterpret_cast<const void*>(&kernel<Op, scalar_t, kVec, 2, kMinBlocksPerSm, I...>), 2);
    }
    if constexpr (packs_limit<Op, scalar_t>() >= 4) {
      consider(reinterpret_cast<const void*>(&kernel<Op, scalar_t, kVec, 4, kMinBlocksPerSm, I...>), 4);
    }
    constexpr bool kHeavy = cost_of<Op, scalar_t>() >= kHeavyCostPerByte * bytes_per_element<Op, scalar_t>();
    constexpr bool kCappedFloat64 =
        sizeof(scalar_t) == 8 && cost_of<Op, scalar_t>() >= kVeryHeavyCostPerByte * bytes_per_element<Op, scalar_t>();
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
    if (max_packs<Op>() == 1 && one_pack_starved && std::is_same_v<scalar_t, torch::headeronly::BFloat16>) {
      packs = kWide;
    }
    return packs;
  }

  template <int kVec>
  static void vec(const Same<I, scalar_t>*... in, scalar_t* out, int64_t n, cudaStream_t stream) {
    const int packs = choose_packs<kVec>();
    if constexpr (max_packs<Op>() == 1) {
      if (packs == kWide) {
        Launch::packs<kVec, 1, kWideMinBlocksPerSm>(in..., out, n, stream);
        return;
      }
    }
    const int64_t waves = kMinWavesForPacks * resident_threads();
    if constexpr (packs_limit<Op, scalar_t>() >= 4) {
      if (packs >= 4 && n / kVec / 4 >= waves) {
        Launch::packs<kVec, 4>(in..., out, n, stream);
        return;
      }
    }
    if constexpr (packs_limit<Op, scalar_t>() >= 2) {
      if (packs >= 2 && n / kVec / 2 >= waves) {
        Launch::packs<kVec, 2>(in..., out, n, stream);
        return;
      }
    }
    Launch::packs<kVec, 1>(in..., out, n, stream);
  }

  // out[i] = Op::apply(in[i]...) for i in [0, n): the vector kernels when every pointer is aligned to
  // the access, else one element per access and one pack per thread (a slow path that exists for
  // correctness; copy the input to an aligned tensor if it is hot).
  static void run(const Same<I, scalar_t>*... in, scalar_t* out, int64_t n, cudaStream_t stream) {
    constexpr int kBytes = access_bytes<Op, scalar_t>();
    constexpr int kVec = kBytes / sizeof(scalar_t);
    if ((is_aligned<kBytes>(in) && ...) && is_aligned<kBytes>(out)) {
      vec<kVec>(in..., out, n, stream);
    } else {
      Launch::packs<1, 1>(in..., out, n, stream);
    }
  }
};

// ---- the backward of an op: every input's gradient in one pass ------------------------------------
// A GradOp is a struct with kInputs and `template <typename acc_t> static void apply(acc_t grad,
// acc_t... inputs, acc_t (&d)[kInputs])` (the gradients, written by kernelgen from the op's formula).
// The kernel reads the output's gradient and the inputs and writes the gradients asked for: a null
// output pointer is a gradient not asked for (ctx.needs_input_grad), not written; the test is the same
// for the whole launch. Like a memory-bound forward op it moves one 16-byte pack of every array per
// thread, over a grid that covers the tensor, with int64 indices and a scalar path for the tail and
// for arrays that are not aligned to the access.

template <typename scalar_t, int kCount>
struct Outputs {
  scalar_t* p[kCount];
};

template <class Op, typename scalar_t, int kVec, std::size_t... I>
__global__ void __launch_bounds__(kThreadsPerBlock, kMinBlocksPerSm)
grad_kernel(const scalar_t* __restrict__ grad, const Same<I, scalar_t>* __restrict__... in,
            Outputs<scalar_t, sizeof...(I)> out, int64_t n) {
  using acc_t = opmath::kernel_math_type<scalar_t, opmath::opmath_type<scalar_t>>;
  using pack_t = Pack<scalar_t, kVec>;
  constexpr int kInputs = sizeof...(I);
  const int64_t n_packs = n / kVec;
  const int64_t p = static_cast<int64_t>(blockIdx.x) * kThreadsPerBlock + threadIdx.x;
  if (p < n_packs) {
    const pack_t g = reinterpret_cast<const pack_t*>(grad)[p];
    const pack_t x[kInputs] = {reinterpret_cast<const pack_t*>(in)[p]...};
    pack_t d[kInputs];
#pragma unroll
    for (int k = 0; k < kVec; ++k) {
      acc_t dk[kInputs];
      Op::template apply<acc_t>(static_cast<acc_t>(g.v[k]), static_cast<acc_t>(x[I].v[k])..., dk);
#pragma unroll
      for (int j = 0; j < kInputs; ++j) {
        d[j].v[k] = static_cast<scalar_t>(dk[j]);
      }
    }
#pragma unroll
    for (int j = 0; j < kInputs; ++j) {
      if (out.p[j] != nullptr) {
        reinterpret_cast<pack_t*>(out.p[j])[p] = d[j];
      }
    }
  }
  // Tail: the last n % kVec elements (fewer than 8), one per thread of block 0; none when kVec == 1.
  const int64_t i = n_packs * kVec + threadIdx.x;
  if (blockIdx.x == 0 && i < n) {
    acc_t di[kInputs];
    Op::template apply<acc_t>(static_cast<acc_t>(grad[i]), static_cast<acc_t>(in[i])..., di);
#pragma unroll
    for (int j = 0; j < kInputs; ++j) {
      if (out.p[j] != nullptr) {
        out.p[j][i] = static_cast<scalar_t>(di[j]);
      }
    }
  }
}

template <class Op, typename scalar_t, class Inputs = std::make_index_sequence<Op::kInputs>>
struct GradLaunch;

template <class Op, typename scalar_t, std::size_t... I>
struct GradLaunch<Op, scalar_t, std::index_sequence<I...>> {
  template <int kVec>
  static void packs(const scalar_t* grad, const Same<I, scalar_t>*... in, Outputs<scalar_t, Op::kInputs> out, int64_t n,
                    cudaStream_t stream) {
    constexpr int64_t kElementsPerBlock = int64_t{kThreadsPerBlock} * kVec;
    constexpr int64_t kMaxElementsPerLaunch = (kMaxBlocks - 1) * kElementsPerBlock;
    for (int64_t start = 0; start < n; start += kMaxElementsPerLaunch) {
      const int64_t count = std::min(n - start, kMaxElementsPerLaunch);
      const int64_t blocks = std::max<int64_t>(1, (count / kVec * kVec + kElementsPerBlock - 1) / kElementsPerBlock);
      Outputs<scalar_t, Op::kInputs> shifted = out;
      for (scalar_t*& q : shifted.p) {
        q = q != nullptr ? q + start : nullptr;
      }
      grad_kernel<Op, scalar_t, kVec, I...><<<static_cast<unsigned int>(blocks), kThreadsPerBlock, 0, stream>>>(
          grad + start, (in + start)..., shifted, count);
      STD_CUDA_KERNEL_LAUNCH_CHECK();  // as in Launch::packs
    }
  }

  // grad_in[j][i] = the gradient of input j at element i, for the inputs whose grad_in is not null.
  static void run(const scalar_t* grad, const Same<I, scalar_t>*... in, Same<I, scalar_t*>... grad_in, int64_t n,
                  cudaStream_t stream) {
    constexpr int kVec = kVectorBytes / sizeof(scalar_t);
    const Outputs<scalar_t, Op::kInputs> out{{grad_in...}};
    bool aligned = is_aligned<kVectorBytes>(grad) && (is_aligned<kVectorBytes>(in) && ...);
    for (scalar_t* q : out.p) {
      aligned = aligned && (q == nullptr || is_aligned<kVectorBytes>(q));
    }
    if (aligned) {
      packs<kVec>(grad, in..., out, n, stream);
    } else {
      packs<1>(grad, in..., out, n, stream);
    }
  }
};

}  // namespace
}  // namespace elementwise
}  // namespace kg
