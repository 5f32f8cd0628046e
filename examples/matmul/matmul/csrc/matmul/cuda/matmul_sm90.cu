// matmul_sm90.cu: the Hopper (sm_90a) path of matmul::matmul for float16 and bfloat16,
// C = matmul_epilogue(A @ B), built from CUTLASS 3.x collectives:
//   * TMA loads of A and B tiles into shared memory, a multi-stage pipeline, and wgmma (warpgroup
//     tensor-core instructions reading shared memory), accumulating in float32;
//   * a warp-specialized, persistent kernel: producer warps issue TMA, consumer warpgroups run
//     wgmma, and each CTA loops over output tiles;
//   * the epilogue fused through CUTLASS's epilogue visitor tree (EVT): a compute node that calls
//     matmul_epilogue (../matmul_problem.h, shared with the other kernels and the CPU loop) on
//     every accumulator element, before the one rounding and the TMA store.
// The tile shape and schedule below were chosen from the configurations measured on an H100 (see
// kTile and kCluster). Everything else (other archs, float32/float64, shapes TMA cannot take: rows
// not 16-byte aligned, i.e. K or N not a multiple of 8, misaligned views) runs the hand-written
// kernels of matmul_kernel.cu, which stay the reference path and the one to learn from.
//
// The kernels need sm_90a (wgmma, setmaxnreg): _build.py compiles for 9.0a where the arch list says
// 9.0. Other passes (sm_80, the PTX for later GPUs) compile an empty kernel, and the launcher takes
// this path only on a 9.0 device.

// CUTLASS's device-side asserts are calls: with them, ptxas serializes the wgmma pipeline ("wgmma
// pipeline crossing function boundary"). This file is built without them.
#ifndef NDEBUG
#define NDEBUG
#endif

#include <cuda_runtime_api.h>
#include <torch/csrc/stable/macros.h>
#include <torch/headeronly/util/BFloat16.h>
#include <torch/headeronly/util/Half.h>

#include <cstdint>

#include "cute/tensor.hpp"
#include "cutlass/cutlass.h"
#include "cutlass/epilogue/collective/collective_builder.hpp"
#include "cutlass/epilogue/fusion/sm90_callbacks_tma_warpspecialized.hpp"
#include "cutlass/gemm/collective/collective_builder.hpp"
#include "cutlass/gemm/device/gemm_universal_adapter.h"
#include "cutlass/gemm/dispatch_policy.hpp"
#include "cutlass/gemm/kernel/gemm_universal.hpp"
#include "cutlass/util/packed_stride.hpp"

#include "../matmul_problem.h"
#include "matmul_kernel.h"

namespace matmul {
namespace {

using namespace cute;

// The epilogue as an EVT compute node: CUTLASS calls Op<Array<float, N>> on fragments of N
// accumulators (and of N bias values); each element goes through matmul_epilogue in float.
template <class Fragment>
struct EpilogueNode {
  CUTLASS_HOST_DEVICE Fragment operator()(Fragment const& acc) const {
    Fragment out;
    CUTLASS_PRAGMA_UNROLL
    for (int i = 0; i < Fragment::kElements; ++i) {
      out[i] = matmul_epilogue<float>(acc[i]);
    }
    return out;
  }
};

// Tile M x N x K per CTA, and CTAs per cluster (a cluster shares each TMA load of A or B by multicast).
// KG_SM90_CONFIG (a -D flag, for measuring) picks one of the prototype's other configurations:
// 1 = 128 x 128 x 64, cluster 1 x 2; 2 = 256 x 128 x 64, cluster 1 x 2 (docs/device/cutlass_proto).
#if !defined(KG_SM90_CONFIG) || KG_SM90_CONFIG == 0
using kTile = Shape<_128, _256, _64>;
using kCluster = Shape<_2, _1, _1>;
#elif KG_SM90_CONFIG == 1
using kTile = Shape<_128, _128, _64>;
using kCluster = Shape<_1, _2, _1>;
#else
using kTile = Shape<_256, _128, _64>;
using kCluster = Shape<_1, _2, _1>;
#endif

template <typename Element>
struct Sm90Gemm {
  using LayoutA = cutlass::layout::RowMajor;  // A: M x K, K contiguous
  using LayoutB = cutlass::layout::RowMajor;  // B: K x N, N contiguous (MN-major for wgmma)
  using LayoutC = cutlass::layout::RowMajor;
  static constexpr int kAlign = 16 / sizeof(Element);  // TMA: 16-byte aligned rows
  static constexpr auto kRound = cutlass::FloatRoundStyle::round_to_nearest;
  using Fusion = cutlass::epilogue::fusion::Sm90EVT<
      cutlass::epilogue::fusion::Sm90Compute<EpilogueNode, Element, float, kRound>,
      cutlass::epilogue::fusion::Sm90AccFetch>;
  using Epilogue = typename cutlass::epilogue::collective::CollectiveBuilder<
      cutlass::arch::Sm90, cutlass::arch::OpClassTensorOp, kTile, kCluster,
      cutlass::epilogue::collective::EpilogueTileAuto, float, float,
      void, LayoutC, kAlign,  // no C operand: the output is written only
      Element, LayoutC, kAlign, cutlass::epilogue::TmaWarpSpecializedCooperative, Fusion>::CollectiveOp;
  using Mainloop = typename cutlass::gemm::collective::CollectiveBuilder<
      cutlass::arch::Sm90, cutlass::arch::OpClassTensorOp, Element, LayoutA, kAlign, Element, LayoutB, kAlign,
      float, kTile, kCluster,
      cutlass::gemm::collective::StageCountAutoCarveout<static_cast<int>(sizeof(typename Epilogue::SharedStorage))>,
      cutlass::gemm::KernelTmaWarpSpecializedCooperative>::CollectiveOp;
  using Kernel = cutlass::gemm::kernel::GemmUniversal<Shape<int, int, int, int>, Mainloop, Epilogue,
                                                      cutlass::gemm::PersistentScheduler>;
  using Adapter = cutlass::gemm::device::GemmUniversalAdapter<Kernel>;
};

bool aligned16(const void* ptr) { return reinterpret_cast<std::uintptr_t>(ptr) % 16 == 0; }

// The CUTLASS element type of a storage type.
template <typename scalar_t>
struct Element;
template <>
struct Element<torch::headeronly::Half> {
  using type = cutlass::half_t;
};
template <>
struct Element<torch::headeronly::BFloat16> {
  using type = cutlass::bfloat16_t;
};

}  // namespace

template <typename scalar_t>
bool launch_matmul_sm90(const scalar_t* a, const scalar_t* b, scalar_t* c, const Problem& p,
                       int device, cudaStream_t stream) {
  using E = typename Element<scalar_t>::type;
  using Gemm = typename Sm90Gemm<E>::Adapter;
  // TMA reads rows that start on 16-byte boundaries; CUTLASS checks the shapes, the pointers are
  // checked here. K = 0 is left to the hand-written kernels.
  constexpr int64_t kAlign = Sm90Gemm<E>::kAlign;
  if (p.k == 0 || p.k % kAlign != 0 || p.n % kAlign != 0 || !aligned16(a) || !aligned16(b) || !aligned16(c)) {
    return false;
  }
  if (p.m > INT32_MAX || p.n > INT32_MAX || p.k > INT32_MAX || p.batch > INT32_MAX) {
    return false;
  }
  const int m = static_cast<int>(p.m), n = static_cast<int>(p.n), k = static_cast<int>(p.k);
  const int batch = static_cast<int>(p.batch);
  using GemmKernel = typename Gemm::GemmKernel;
  const auto stride_a = cutlass::make_cute_packed_stride(typename GemmKernel::StrideA{}, make_shape(m, k, batch));
  const auto stride_b = cutlass::make_cute_packed_stride(typename GemmKernel::StrideB{}, make_shape(n, k, batch));
  const auto stride_c = cutlass::make_cute_packed_stride(typename GemmKernel::StrideD{}, make_shape(m, n, batch));
  // The SM count once per device (the persistent scheduler launches one CTA per SM at most).
  static int sm_count[64] = {};
  if (device < 0 || device >= 64) {
    return false;
  }
  if (sm_count[device] == 0) {
    STD_CUDA_CHECK(cudaDeviceGetAttribute(&sm_count[device], cudaDevAttrMultiProcessorCount, device));
  }
  cutlass::KernelHardwareInfo hw;
  hw.device_id = device;
  hw.sm_count = sm_count[device];
  typename Gemm::Arguments args{cutlass::gemm::GemmUniversalMode::kGemm,
                                {m, n, k, batch},
                                {reinterpret_cast<const E*>(a), stride_a, reinterpret_cast<const E*>(b), stride_b},
                                {{}, nullptr, stride_c, reinterpret_cast<E*>(c), stride_c},
                                hw};
  Gemm gemm;
  // No workspace is passed: the persistent data-parallel scheduler needs none (a configuration that
  // did, split-K or stream-K, would fall back here rather than allocate behind the caller's back).
  if (gemm.can_implement(args) != cutlass::Status::kSuccess || Gemm::get_workspace_size(args) != 0) {
    return false;
  }
  if (gemm.initialize(args, nullptr, stream) != cutlass::Status::kSuccess) {
    return false;
  }
  const cutlass::Status status = gemm.run(stream);
  STD_CUDA_KERNEL_LAUNCH_CHECK();
  return status == cutlass::Status::kSuccess;
}

template bool launch_matmul_sm90<torch::headeronly::Half>(const torch::headeronly::Half*, const torch::headeronly::Half*, torch::headeronly::Half*, const Problem&, int, cudaStream_t);
template bool launch_matmul_sm90<torch::headeronly::BFloat16>(const torch::headeronly::BFloat16*, const torch::headeronly::BFloat16*, torch::headeronly::BFloat16*, const Problem&, int, cudaStream_t);

}  // namespace matmul
