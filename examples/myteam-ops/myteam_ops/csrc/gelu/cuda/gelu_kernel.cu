// gelu_kernel.cu: the CUDA kernel of myteam::gelu and its launcher.
// The tensor side (checks, device guard, allocation, stream, dtype dispatch, registration) is in
// gelu_cuda.cpp. This file sees raw pointers only and includes no tensor headers, stable or
// not: nvcc spends most of a build parsing ATen's (about 25 s of a 35 s compile), and the kernel
// needs none. Only header-only pieces of torch are used: the half types and the CUDA error checks.
//
// An elementwise op does a few flops per element and is limited by memory bandwidth, so the
// kernel's job is to keep the memory system busy. Each choice below was measured on an H100
// (docs/benchmarks.md in the kernelgen repository has the figures):
//   * 16-byte (128-bit) loads and stores: 4 float32 or 8 float16/bfloat16 elements per access.
//     2-byte accesses cannot fill the memory pipe: a one-element-per-thread kernel loses about a
//     quarter of the bandwidth in bfloat16.
//   * Enough loads in flight: each thread issues all its loads before any math, about 64 bytes
//     on large tensors (kPacksPerThread packs of every input). With one 16-byte load per thread, a
//     unary op with erf ran at 0.94x of torch.compile in float16; with four, 1.07x. On tensors
//     that fill the GPU only a few times over, one pack per thread keeps every SM busy instead.
//   * A grid that covers the whole tensor and no loop in the kernel: blocks sweep memory in order,
//     and a thread that runs once needs fewer registers (more resident warps). A grid of a few
//     waves with a grid-stride loop ran 4% slower (DRAM throughput 90% instead of 93% of peak):
//     long-lived blocks drift apart and scatter the addresses in flight.
//   * int64 indices: an `int` index overflows past 2^31 elements.
//   * A scalar path for the last n % kVec elements, and for inputs whose data pointer is not
//     16-byte aligned (a view such as x[1:] starts 1 element into its storage).
// The formula itself is gelu_expr in ../gelu.h, shared with the CPU code.

#include <cuda_runtime_api.h>
// STD_CUDA_CHECK, STD_CUDA_KERNEL_LAUNCH_CHECK: C10_CUDA_CHECK's stable twins (the same messages,
// device-side assert hints included); they need -DUSE_CUDA, which _build.py sets.
#include <torch/csrc/stable/macros.h>
#include <torch/headeronly/util/BFloat16.h>
#include <torch/headeronly/util/Half.h>

#include <algorithm>
#include <cstdint>

#include "../gelu.h"
#include "gelu_kernel.h"

namespace gelu {
namespace {

constexpr int kThreadsPerBlock = 256;
constexpr int kVectorBytes = 16;  // the widest load one thread can issue
constexpr int kInputs = 1;
// 16-byte packs per input and thread on large tensors: about 64 bytes of loads in flight per
// thread. More only costs registers (a 3-input op with 4 packs per thread ran at 0.81x in bfloat16).
constexpr int kPacksPerThread = kInputs >= 4 ? 1 : 4 / kInputs;
// ...used when the grid is then still at least this many times the threads the GPU holds at
// once. Fewer, longer blocks leave SMs idle at the end of a shallow grid (and on small tensors,
// idle from the start).
constexpr int64_t kMinWavesForPacks = 4;
// At least this many blocks resident per SM: __launch_bounds__ then caps registers at
// 65536 / (4 * 256) = 64 per thread, so that at least half of the SM's thread slots hold warps
// whose loads are in flight. (Uncapped, a 4-input bfloat16 op used 159 registers: one block per SM.)
constexpr int kMinBlocksPerSm = 4;
// The hardware limit on gridDim.x. launch_packs splits a tensor that would need more blocks
// (over 2^39 elements) into several launches.
constexpr int64_t kMaxBlocks = 2147483647;

// kVec elements moved as one 16-byte access. alignas makes the compiler emit a single
// ld.global.v4 / st.global.v4 for the whole struct.
template <typename scalar_t, int kVec>
struct alignas(sizeof(scalar_t) * kVec) Pack {
  scalar_t v[kVec];
};

// out[i] = gelu_expr(inputs[i]) for i in [0, n). Block b covers packs
// [b * kPacksPerBlock, (b + 1) * kPacksPerBlock); its thread t takes packs t, t + 256, ..., so a warp
// reads one contiguous 512-byte span per input and pack (coalesced). Block 0 also does the last
// n % kVec elements, one per thread.
template <typename scalar_t, int kVec, int kPacks>
__global__ void __launch_bounds__(kThreadsPerBlock, kMinBlocksPerSm)
gelu_kernel(const scalar_t* __restrict__ x, scalar_t* __restrict__ out, int64_t n) {
  using acc_t = opmath::opmath_type<scalar_t>;
  using pack_t = Pack<scalar_t, kVec>;
  constexpr int64_t kPacksPerBlock = int64_t{kThreadsPerBlock} * kPacks;
  const int64_t n_packs = n / kVec;
  const int64_t first = static_cast<int64_t>(blockIdx.x) * kPacksPerBlock + threadIdx.x;

  // All loads first, so that they are in flight together; then the math and the stores.
  pack_t x_in[kPacks];
#pragma unroll
  for (int u = 0; u < kPacks; ++u) {
    const int64_t p = first + u * kThreadsPerBlock;
    if (p < n_packs) {
      x_in[u] = reinterpret_cast<const pack_t*>(x)[p];
    }
  }
#pragma unroll
  for (int u = 0; u < kPacks; ++u) {
    const int64_t p = first + u * kThreadsPerBlock;
    if (p < n_packs) {
      pack_t result;
#pragma unroll
      for (int k = 0; k < kVec; ++k) {
        result.v[k] = static_cast<scalar_t>(gelu_expr<acc_t>(
            static_cast<acc_t>(x_in[u].v[k])));
      }
      reinterpret_cast<pack_t*>(out)[p] = result;
    }
  }

  // Tail: the last n % kVec elements (fewer than 8), one per thread of block 0; none when kVec == 1.
  const int64_t i = n_packs * kVec + threadIdx.x;
  if (blockIdx.x == 0 && i < n) {
    out[i] = static_cast<scalar_t>(gelu_expr<acc_t>(
        static_cast<acc_t>(x[i])));
  }
}

bool is_aligned(const void* ptr) {
  return reinterpret_cast<std::uintptr_t>(ptr) % kVectorBytes == 0;
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

template <typename scalar_t, int kVec, int kPacks>
void launch_packs(const scalar_t* x, scalar_t* out, int64_t n, cudaStream_t stream) {
  constexpr int64_t kElementsPerBlock = int64_t{kThreadsPerBlock} * kPacks * kVec;
  // A multiple of kVec, so every launch but the last gets whole, still aligned, packs.
  constexpr int64_t kMaxElementsPerLaunch = (kMaxBlocks - 1) * kElementsPerBlock;
  for (int64_t start = 0; start < n; start += kMaxElementsPerLaunch) {
    const int64_t count = std::min(n - start, kMaxElementsPerLaunch);
    // Enough blocks for the whole packs; at least one, which also covers a tensor of only a tail.
    const int64_t blocks = std::max<int64_t>(1, (count / kVec * kVec + kElementsPerBlock - 1) / kElementsPerBlock);
    gelu_kernel<scalar_t, kVec, kPacks><<<static_cast<unsigned int>(blocks), kThreadsPerBlock, 0, stream>>>(
        x + start, out + start, count);
    // Kernel launches are asynchronous: a bad launch configuration is only reported by the next
    // CUDA call, far from its cause, unless it is checked right here.
    STD_CUDA_KERNEL_LAUNCH_CHECK();
  }
}

template <typename scalar_t, int kVec>
void launch_vec(const scalar_t* x, scalar_t* out, int64_t n, cudaStream_t stream) {
  if constexpr (kPacksPerThread > 1) {
    if (n / kVec / kPacksPerThread >= kMinWavesForPacks * resident_threads()) {
      launch_packs<scalar_t, kVec, kPacksPerThread>(x, out, n, stream);
      return;
    }
  }
  launch_packs<scalar_t, kVec, 1>(x, out, n, stream);
}

}  // namespace

template <typename scalar_t>
void launch_gelu(const scalar_t* x, scalar_t* out, int64_t n, cudaStream_t stream) {
  constexpr int kVec = kVectorBytes / sizeof(scalar_t);
  if (is_aligned(x) && is_aligned(out)) {
    launch_vec<scalar_t, kVec>(x, out, n, stream);
  } else {
    launch_vec<scalar_t, 1>(x, out, n, stream);
  }
}

// One instantiation per supported dtype; gelu_cuda.cpp calls them from its dtype dispatch.
template void launch_gelu<float>(const float*, float*, int64_t, cudaStream_t);
template void launch_gelu<double>(const double*, double*, int64_t, cudaStream_t);
template void launch_gelu<torch::headeronly::Half>(const torch::headeronly::Half*, torch::headeronly::Half*, int64_t, cudaStream_t);
template void launch_gelu<torch::headeronly::BFloat16>(const torch::headeronly::BFloat16*, torch::headeronly::BFloat16*, int64_t, cudaStream_t);

}  // namespace gelu
