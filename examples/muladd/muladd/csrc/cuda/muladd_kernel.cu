// muladd_kernel.cu: the CUDA kernel of muladd::muladd and its launcher.
// The tensor side (checks, device guard, allocation, stream, dtype dispatch, registration) is in
// muladd_cuda.cpp. This file sees raw pointers only and includes no ATen tensor headers:
// nvcc spends most of a build parsing them (about 25 s of a 35 s compile), so keeping them out of
// the .cu roughly halves the build.
//
// An elementwise op does a few flops per element and is limited by memory bandwidth, so the
// kernel's job is to keep the memory system busy:
//   * 16-byte (128-bit) loads and stores: 4 float32 or 8 float16/bfloat16 elements per access.
//     2-byte accesses cannot fill the memory pipe; on an H100 a one-element-per-thread kernel
//     loses about a quarter of the bandwidth in bfloat16.
//   * One thread per 16-byte pack and a grid that covers the whole tensor, so blocks sweep memory
//     in order. A grid capped at a few waves of resident blocks with a grid-stride loop was
//     measured 4% slower on an H100 (DRAM throughput 90% instead of 93% of peak): long-lived
//     blocks drift apart and scatter the addresses in flight. docs/benchmarks.md has the figures.
//   * int64 indices: an `int` index overflows past 2^31 elements.
//   * A scalar path for the last n % kVec elements, and for inputs whose data pointer is not
//     16-byte aligned (a view such as x[1:] starts 1 element into its storage).
// The formula itself is muladd_expr in ../muladd.h, shared with the CPU code.

#include <ATen/OpMathType.h>
#include <c10/cuda/CUDAException.h>
#include <c10/util/BFloat16.h>
#include <c10/util/Half.h>

#include <algorithm>
#include <cstdint>

#include "../muladd.h"
#include "muladd_kernel.h"

namespace muladd {
namespace {

constexpr int kThreadsPerBlock = 256;
constexpr int kVectorBytes = 16;  // the widest load one thread can issue
// At least this many blocks resident per SM: __launch_bounds__ then caps registers at
// 65536 / (4 * 256) = 64 per thread, so that at least half of the SM's thread slots hold warps
// whose loads are in flight. (Uncapped, a 4-input bfloat16 op used 159 registers: one block per SM.)
constexpr int kMinBlocksPerSm = 4;
// The hardware limit on gridDim.x. Only more than 2^39 work items (packs, or elements on the scalar
// path) need more blocks than this; the kernel's grid-stride loop then covers the rest.
constexpr int64_t kMaxBlocks = 2147483647;

// kVec elements moved as one 16-byte access. alignas makes the compiler emit a single
// ld.global.v4 / st.global.v4 for the whole struct.
template <typename scalar_t, int kVec>
struct alignas(sizeof(scalar_t) * kVec) Pack {
  scalar_t v[kVec];
};

template <typename scalar_t, int kVec>
__global__ void __launch_bounds__(kThreadsPerBlock, kMinBlocksPerSm)
muladd_kernel(const scalar_t* __restrict__ a, const scalar_t* __restrict__ b, const scalar_t* __restrict__ c, scalar_t* __restrict__ out, int64_t n) {
  using acc_t = at::opmath_type<scalar_t>;
  using pack_t = Pack<scalar_t, kVec>;
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  const int64_t first = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;

  // One pack of kVec elements per thread; consecutive threads take consecutive packs, so a warp
  // reads one contiguous 512-byte span per input (coalesced). The grid normally covers every pack
  // and the loop body runs once; the loop only matters past kMaxBlocks blocks.
  const int64_t n_packs = n / kVec;
  for (int64_t p = first; p < n_packs; p += stride) {
    const pack_t a_in = reinterpret_cast<const pack_t*>(a)[p];
    const pack_t b_in = reinterpret_cast<const pack_t*>(b)[p];
    const pack_t c_in = reinterpret_cast<const pack_t*>(c)[p];
    pack_t result;
#pragma unroll
    for (int k = 0; k < kVec; ++k) {
      result.v[k] = static_cast<scalar_t>(muladd_expr<acc_t>(
          static_cast<acc_t>(a_in.v[k]), static_cast<acc_t>(b_in.v[k]), static_cast<acc_t>(c_in.v[k])));
    }
    reinterpret_cast<pack_t*>(out)[p] = result;
  }

  // Tail: the last n % kVec elements, one per thread (empty when kVec == 1).
  for (int64_t i = n_packs * kVec + first; i < n; i += stride) {
    out[i] = static_cast<scalar_t>(muladd_expr<acc_t>(
        static_cast<acc_t>(a[i]), static_cast<acc_t>(b[i]), static_cast<acc_t>(c[i])));
  }
}

bool is_aligned(const void* ptr) {
  return reinterpret_cast<std::uintptr_t>(ptr) % kVectorBytes == 0;
}

// Blocks to launch: one thread per work item (a pack, or an element on the scalar path).
int64_t grid_size(int64_t work_items) {
  const int64_t blocks = (work_items + kThreadsPerBlock - 1) / kThreadsPerBlock;
  return std::max<int64_t>(1, std::min(blocks, kMaxBlocks));
}

template <typename scalar_t, int kVec>
void launch_packs(const scalar_t* a, const scalar_t* b, const scalar_t* c, scalar_t* out, int64_t n, cudaStream_t stream) {
  const auto kernel = muladd_kernel<scalar_t, kVec>;
  // One thread per pack; the n % kVec (< 256) tail elements go to the first block's threads.
  const int64_t blocks = grid_size(n / kVec);
  kernel<<<static_cast<unsigned int>(blocks), kThreadsPerBlock, 0, stream>>>(a, b, c, out, n);
  // Kernel launches are asynchronous: a bad launch configuration is only reported by the next CUDA
  // call, far from its cause, unless it is checked right here.
  C10_CUDA_KERNEL_LAUNCH_CHECK();
}

}  // namespace

template <typename scalar_t>
void launch_muladd(const scalar_t* a, const scalar_t* b, const scalar_t* c, scalar_t* out, int64_t n, cudaStream_t stream) {
  constexpr int kVec = kVectorBytes / sizeof(scalar_t);
  if (is_aligned(a) && is_aligned(b) && is_aligned(c) && is_aligned(out)) {
    launch_packs<scalar_t, kVec>(a, b, c, out, n, stream);
  } else {
    launch_packs<scalar_t, 1>(a, b, c, out, n, stream);
  }
}

// One instantiation per supported dtype; muladd_cuda.cpp calls them from its dtype dispatch.
template void launch_muladd<float>(const float*, const float*, const float*, float*, int64_t, cudaStream_t);
template void launch_muladd<double>(const double*, const double*, const double*, double*, int64_t, cudaStream_t);
template void launch_muladd<at::Half>(const at::Half*, const at::Half*, const at::Half*, at::Half*, int64_t, cudaStream_t);
template void launch_muladd<at::BFloat16>(const at::BFloat16*, const at::BFloat16*, const at::BFloat16*, at::BFloat16*, int64_t, cudaStream_t);

}  // namespace muladd
