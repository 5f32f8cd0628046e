// Prototype for issue 11 (not shipped by kernelgen yet): a Hopper GEMM D = epilogue(A @ B [, bias]) for
// float16 / bfloat16 built from CUTLASS 3.x collectives (TMA loads, wgmma, warp-specialized pipeline,
// float32 accumulation) with the epilogue fused through an epilogue visitor tree (EVT). A is M x K
// row-major, B is K x N row-major (N contiguous), bias has N elements (broadcast over rows), D is M x N
// row-major. Several tile/schedule configurations are compiled so that one device run can choose.
//
// The epilogue is a functor applied to one accumulator element (and its bias): kernelgen would emit it
// from --epilogue, through the same safe parser as elementwise expressions. Here: `acc` (plain product)
// and `(acc + bias) * sigmoid(1.702 * (acc + bias))` (bias + a sigmoid-approximated GELU).
//
// Built by docs/device/cutlass_proto/build.py against the nvidia-cutlass wheel's headers.

#include <cuda_runtime_api.h>

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

#include "mm_sm90.h"

namespace mm_proto {
namespace {

using namespace cute;

// ---- the epilogue, per element, in float ----
struct PlainEpilogue {
  template <typename T>
  CUTLASS_HOST_DEVICE static T apply(T acc) { return acc; }
};

struct BiasGeluEpilogue {
  template <typename T>
  CUTLASS_HOST_DEVICE static T apply(T acc, T bias) {
    const T h = acc + bias;
    return h * (T(1) / (T(1) + ::expf(T(-1.702) * h)));
  }
};

// EVT compute nodes: Sm90Compute instantiates ComputeFn<Array<float, N>> and calls it on fragments.
template <class Fn>
struct UnaryNode {
  template <class T>
  struct Op {
    CUTLASS_HOST_DEVICE T operator()(T const& acc) const {
      T out;
      CUTLASS_PRAGMA_UNROLL
      for (int i = 0; i < T::kElements; ++i) {
        out[i] = Fn::apply(acc[i]);
      }
      return out;
    }
  };
};

template <class Fn>
struct BinaryNode {
  template <class T>
  struct Op {
    CUTLASS_HOST_DEVICE T operator()(T const& acc, T const& bias) const {
      T out;
      CUTLASS_PRAGMA_UNROLL
      for (int i = 0; i < T::kElements; ++i) {
        out[i] = Fn::apply(acc[i], bias[i]);
      }
      return out;
    }
  };
};

template <class Element, class TileShape, class ClusterShape, class KernelSchedule, class EpilogueSchedule,
          bool kBias>
struct Config {
  static constexpr bool kHasBias = kBias;
  using LayoutA = cutlass::layout::RowMajor;
  using LayoutB = cutlass::layout::RowMajor;  // K x N, N contiguous: an MN-major B for wgmma
  using LayoutD = cutlass::layout::RowMajor;
  static constexpr int kAlign = 16 / sizeof(Element);  // TMA needs 16-byte aligned rows
  static constexpr auto kRound = cutlass::FloatRoundStyle::round_to_nearest;

  using Fusion = cute::conditional_t<
      kBias,
      cutlass::epilogue::fusion::Sm90EVT<
          cutlass::epilogue::fusion::Sm90Compute<BinaryNode<BiasGeluEpilogue>::template Op, Element, float, kRound>,
          cutlass::epilogue::fusion::Sm90AccFetch,
          cutlass::epilogue::fusion::Sm90RowBroadcast<0, TileShape, Element, float>>,
      cutlass::epilogue::fusion::Sm90EVT<
          cutlass::epilogue::fusion::Sm90Compute<UnaryNode<PlainEpilogue>::template Op, Element, float, kRound>,
          cutlass::epilogue::fusion::Sm90AccFetch>>;

  using CollectiveEpilogue = typename cutlass::epilogue::collective::CollectiveBuilder<
      cutlass::arch::Sm90, cutlass::arch::OpClassTensorOp, TileShape, ClusterShape,
      cutlass::epilogue::collective::EpilogueTileAuto, float, float,
      void, LayoutD, kAlign,  // no C operand: D is written only
      Element, LayoutD, kAlign, EpilogueSchedule, Fusion>::CollectiveOp;

  using CollectiveMainloop = typename cutlass::gemm::collective::CollectiveBuilder<
      cutlass::arch::Sm90, cutlass::arch::OpClassTensorOp, Element, LayoutA, kAlign, Element, LayoutB, kAlign, float,
      TileShape, ClusterShape,
      cutlass::gemm::collective::StageCountAutoCarveout<static_cast<int>(
          sizeof(typename CollectiveEpilogue::SharedStorage))>,
      KernelSchedule>::CollectiveOp;

  using Kernel = cutlass::gemm::kernel::GemmUniversal<Shape<int, int, int, int>, CollectiveMainloop,
                                                      CollectiveEpilogue, cutlass::gemm::PersistentScheduler>;
  using Gemm = cutlass::gemm::device::GemmUniversalAdapter<Kernel>;
};

template <class C>
int run(const void* a, const void* b, const void* bias, void* d, int m, int n, int k, void* workspace,
        size_t workspace_bytes, cudaStream_t stream) {
  using Gemm = typename C::Gemm;
  using E = typename Gemm::ElementA;
  auto stride_a = cutlass::make_cute_packed_stride(typename Gemm::GemmKernel::StrideA{}, make_shape(m, k, 1));
  auto stride_b = cutlass::make_cute_packed_stride(typename Gemm::GemmKernel::StrideB{}, make_shape(n, k, 1));
  auto stride_d = cutlass::make_cute_packed_stride(typename Gemm::GemmKernel::StrideD{}, make_shape(m, n, 1));
  cutlass::KernelHardwareInfo hw;
  cudaGetDevice(&hw.device_id);
  hw.sm_count = cutlass::KernelHardwareInfo::query_device_multiprocessor_count(hw.device_id);
  typename Gemm::Arguments args{cutlass::gemm::GemmUniversalMode::kGemm,
                                {m, n, k, 1},
                                {static_cast<const E*>(a), stride_a, static_cast<const E*>(b), stride_b},
                                {{}, nullptr, stride_d, static_cast<E*>(d), stride_d},
                                hw};
  if constexpr (C::kHasBias) {
    args.epilogue.thread = {{}, {static_cast<const E*>(bias)}, {}};  // {acc, row broadcast, compute}
  }
  Gemm gemm;
  if (gemm.can_implement(args) != cutlass::Status::kSuccess) {
    return 1;
  }
  if (Gemm::get_workspace_size(args) > workspace_bytes) {
    return 2;
  }
  if (gemm.initialize(args, workspace, stream) != cutlass::Status::kSuccess) {
    return 3;
  }
  return gemm.run(stream) == cutlass::Status::kSuccess ? 0 : 4;
}

// The configurations one device run compares (tile M x N x K, cluster, schedule).
using Cooperative = cutlass::gemm::KernelTmaWarpSpecializedCooperative;
using Pingpong = cutlass::gemm::KernelTmaWarpSpecializedPingpong;
using EpiCooperative = cutlass::epilogue::TmaWarpSpecializedCooperative;
using EpiPingpong = cutlass::epilogue::TmaWarpSpecialized;
using C0 = Config<MM_ELEMENT, Shape<_128, _256, _64>, Shape<_2, _1, _1>, Cooperative, EpiCooperative, MM_BIAS>;
using C1 = Config<MM_ELEMENT, Shape<_128, _128, _64>, Shape<_1, _2, _1>, Pingpong, EpiPingpong, MM_BIAS>;
using C2 = Config<MM_ELEMENT, Shape<_256, _128, _64>, Shape<_1, _2, _1>, Cooperative, EpiCooperative, MM_BIAS>;
// Candidates for problems below one wave of 128 x 128 tiles (stop 21).
using C3 = Config<MM_ELEMENT, Shape<_64, _128, _64>, Shape<_1, _1, _1>, Pingpong, EpiPingpong, MM_BIAS>;
using C4 = Config<MM_ELEMENT, Shape<_128, _128, _64>, Shape<_1, _1, _1>, Pingpong, EpiPingpong, MM_BIAS>;
using C5 = Config<MM_ELEMENT, Shape<_64, _128, _64>, Shape<_1, _2, _1>, Pingpong, EpiPingpong, MM_BIAS>;
using C6 = Config<MM_ELEMENT, Shape<_128, _64, _64>, Shape<_1, _1, _1>, Pingpong, EpiPingpong, MM_BIAS>;

}  // namespace
}  // namespace mm_proto

int MM_ENTRY(int config, const void* a, const void* b, const void* bias, void* d, int m, int n, int k,
             void* workspace, size_t workspace_bytes, cudaStream_t stream) {
  switch (config) {
    case 1:
      return mm_proto::run<mm_proto::C1>(a, b, bias, d, m, n, k, workspace, workspace_bytes, stream);
#ifndef MM_ONLY_SMALL
    case 0:
      return mm_proto::run<mm_proto::C0>(a, b, bias, d, m, n, k, workspace, workspace_bytes, stream);
    case 2:
      return mm_proto::run<mm_proto::C2>(a, b, bias, d, m, n, k, workspace, workspace_bytes, stream);
#endif
    case 3:
      return mm_proto::run<mm_proto::C3>(a, b, bias, d, m, n, k, workspace, workspace_bytes, stream);
    case 4:
      return mm_proto::run<mm_proto::C4>(a, b, bias, d, m, n, k, workspace, workspace_bytes, stream);
    case 5:
      return mm_proto::run<mm_proto::C5>(a, b, bias, d, m, n, k, workspace, workspace_bytes, stream);
    case 6:
      return mm_proto::run<mm_proto::C6>(a, b, bias, d, m, n, k, workspace, workspace_bytes, stream);
    default:
      return 9;
  }
}
