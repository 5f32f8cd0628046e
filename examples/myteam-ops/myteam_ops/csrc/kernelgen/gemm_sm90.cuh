#pragma once
// kernelgen/gemm_sm90.cuh: the Hopper (sm_90a) path every matmul op of this package shares for float16
// and bfloat16, C = Op::epilogue(A @ B[, bias]), built from CUTLASS 3.x collectives:
//   * TMA loads of A and B tiles into shared memory, a multi-stage pipeline, and wgmma (warpgroup
//     tensor-core instructions reading shared memory), accumulating in float32;
//   * a warp-specialized, persistent kernel: producer warps issue TMA, consumer warpgroups run
//     wgmma, and each CTA loops over output tiles;
//   * the epilogue fused through CUTLASS's epilogue visitor tree (EVT): a compute node that calls the
//     op's epilogue (the one its other kernels and its CPU loop call) on every accumulator element,
//     with the bias broadcast along the rows when the op has one, before the one rounding and the
//     TMA store; for an op whose backward reads the accumulator (Op::kSavesAcc), an aux-store node
//     before it also stores the accumulator, rounded to the output's dtype, when the training forward
//     passes a pointer for it (a null pointer stores nothing: one kernel serves both forwards).
// Two configurations (Large and Tiny below), picked per problem by its tile count. Everything else
// (other archs, float32/float64, shapes TMA cannot take: rows not 16-byte aligned, i.e. K or N not a
// multiple of 8, misaligned views) runs the package's hand-written kernels (gemm.cuh), which stay the
// reference path and the one to learn from. An op's <op>_sm90.cu holds one instantiation per dtype.
//
// The kernels need sm_90a (wgmma, setmaxnreg): _build.py compiles for 9.0a where the arch list says
// 9.0. Other passes (sm_80, the PTX for later GPUs) compile an empty kernel, and the launcher takes
// this path only on a 9.0 device.

// CUTLASS's device-side asserts are calls: with them, ptxas serializes the wgmma pipeline ("wgmma
// pipeline crossing function boundary"). Files that include this header first are built without them.
#ifndef NDEBUG
#define NDEBUG
#endif

#include <cuda_runtime_api.h>
#include <torch/csrc/stable/macros.h>
#include <torch/headeronly/util/BFloat16.h>
#include <torch/headeronly/util/Half.h>

#include <cstddef>
#include <cstdint>
#include <type_traits>
#include <utility>

#include "cute/tensor.hpp"
#include "cutlass/cutlass.h"
#include "cutlass/epilogue/collective/collective_builder.hpp"
#include "cutlass/epilogue/fusion/sm90_callbacks_tma_warpspecialized.hpp"
#include "cutlass/gemm/collective/collective_builder.hpp"
#include "cutlass/gemm/device/gemm_universal_adapter.h"
#include "cutlass/gemm/dispatch_policy.hpp"
#include "cutlass/gemm/kernel/gemm_universal.hpp"
#include "cutlass/util/packed_stride.hpp"

#include "../opmath.h"

namespace kg {
namespace gemm_sm90 {
namespace {

using namespace cute;

// One bias pointer per index of the pack I... (none, or one for an op with a bias).
template <std::size_t, typename T>
using Same = T;

// The op's epilogue as an EVT compute node: CUTLASS calls Node<Array<float, N>> on fragments of N
// accumulators (and of N bias values); each element goes through Op::epilogue in opmath::fast_float,
// the float whose division, exp and sigmoid use the fast instructions (../opmath.h: their error is far
// below the 16-bit output's rounding). With accurate math, a bias + GELU epilogue doubles the time of
// an 8192 x 8192 x 1024 product: IEEE division branches to a slow path, which keeps the compiler from
// interleaving the elements, and the epilogue warps have no other work to hide it.
template <class Op>
struct Epilogue {
  template <class Fragment>
  struct Node {
    template <class... Bias>
    CUTLASS_HOST_DEVICE Fragment operator()(Fragment const& acc, Bias const&... bias) const {
      Fragment out;
      CUTLASS_PRAGMA_UNROLL
      for (int i = 0; i < Fragment::kElements; ++i) {
        out[i] = static_cast<float>(Op::template epilogue<opmath::fast_float>(acc[i], bias[i]...));
      }
      return out;
    }
  };
};

// One configuration: the tile M x N x K per CTA, the CTAs per cluster (a cluster shares each TMA load
// of A or B by multicast), and the kernel schedule. Against cuBLAS on an H100, float16 and bfloat16:
//   * Large: 128 x 256 x 64, cluster 2 x 1, cooperative (two consumer warpgroups share each tile):
//     0.93-0.97x of cuBLAS at 4096^3, 8192^3 and 8192 x 8192 x 1024, 0.99x at 2048^3; but 0.57x at
//     1024^3, whose 32 tiles leave 100 of the 132 SMs idle.
//   * Tiny: 64 x 128 x 64, no cluster, ping-pong (each consumer warpgroup owns a tile; one runs its
//     epilogue while the other runs its main loop): 0.96x at 1024^3, 0.81-0.87x at 512^3, 0.88-0.97x
//     at 2048 x 1024 x 1024; but 0.57x at 2048^3 (512 tiles: four waves of small tiles).
//   * Not built, as no faster: 256 x 128 cooperative (within 0.03x of Large everywhere); 128 x 128
//     ping-pong with a 1 x 2 cluster (0.73-0.78x at 1024^3, 0.65x at 8192^3) or none; 128 x 64 and
//     64 x 128 with a cluster (below Tiny at 1024^3). Each configuration costs about 25 s of nvcc per
//     dtype on the build machine, so the file keeps two.
// The launcher takes Tiny when Large would leave more than half of the SMs idle.
struct Large {
  using Tile = Shape<_128, _256, _64>;
  using Cluster = Shape<_2, _1, _1>;
  using MainloopSchedule = cutlass::gemm::KernelTmaWarpSpecializedCooperative;
  using EpilogueSchedule = cutlass::epilogue::TmaWarpSpecializedCooperative;
};
struct Tiny {
  using Tile = Shape<_64, _128, _64>;
  using Cluster = Shape<_1, _1, _1>;
  using MainloopSchedule = cutlass::gemm::KernelTmaWarpSpecializedPingpong;
  using EpilogueSchedule = cutlass::epilogue::TmaWarpSpecialized;
};

template <typename Element, typename Config, class Op>
struct Sm90Gemm {
  using LayoutA = cutlass::layout::RowMajor;  // A: M x K, K contiguous
  using LayoutB = cutlass::layout::RowMajor;  // B: K x N, N contiguous (MN-major for wgmma)
  using LayoutC = cutlass::layout::RowMajor;
  using Tile = typename Config::Tile;
  static constexpr int kAlign = 16 / sizeof(Element);  // TMA: 16-byte aligned rows
  static constexpr auto kRound = cutlass::FloatRoundStyle::round_to_nearest;
  using Compute = cutlass::epilogue::fusion::Sm90Compute<Epilogue<Op>::template Node, Element, float, kRound>;
  // The accumulator as the epilogue's first operand: fetched, or (Op::kSavesAcc) fetched and passed
  // through an aux store, which writes it to memory through shared memory and TMA, as the output is
  // written, and hands it on unchanged. Its shared-memory layout, copy atom and stage count are the
  // ones the epilogue builder picks for the output (same dtype, tile and schedule).
  using EpilogueShape = cutlass::epilogue::collective::detail::EpilogueDescriptor<
      Tile, cutlass::epilogue::collective::EpilogueTileAuto, void, Element, typename Config::EpilogueSchedule>;
  using AuxShape = cutlass::epilogue::collective::detail::AuxStoreDescriptor<EpilogueShape, LayoutC, Element>;
  using AccStore = cutlass::epilogue::fusion::Sm90AuxStore<
      AuxShape::Stages, typename AuxShape::EpilogueTile, Element, kRound, typename AuxShape::Stride,
      typename AuxShape::SmemLayoutAtom, typename AuxShape::CopyOpR2S, kAlign>;
  using Acc = std::conditional_t<Op::kSavesAcc,
                                 cutlass::epilogue::fusion::Sm90EVT<AccStore, cutlass::epilogue::fusion::Sm90AccFetch>,
                                 cutlass::epilogue::fusion::Sm90AccFetch>;
  using Fusion = std::conditional_t<
      Op::kBias,
      cutlass::epilogue::fusion::Sm90EVT<Compute, Acc, cutlass::epilogue::fusion::Sm90RowBroadcast<0, Tile, Element, float>>,
      cutlass::epilogue::fusion::Sm90EVT<Compute, Acc>>;
  using Epilogue = typename cutlass::epilogue::collective::CollectiveBuilder<
      cutlass::arch::Sm90, cutlass::arch::OpClassTensorOp, Tile, typename Config::Cluster,
      cutlass::epilogue::collective::EpilogueTileAuto, float, float,
      void, LayoutC, kAlign,  // no C operand: the output is written only
      Element, LayoutC, kAlign, typename Config::EpilogueSchedule, Fusion>::CollectiveOp;
  using Mainloop = typename cutlass::gemm::collective::CollectiveBuilder<
      cutlass::arch::Sm90, cutlass::arch::OpClassTensorOp, Element, LayoutA, kAlign, Element, LayoutB, kAlign,
      float, Tile, typename Config::Cluster,
      cutlass::gemm::collective::StageCountAutoCarveout<static_cast<int>(sizeof(typename Epilogue::SharedStorage))>,
      typename Config::MainloopSchedule>::CollectiveOp;
  using Kernel = cutlass::gemm::kernel::GemmUniversal<Shape<int, int, int, int>, Mainloop, Epilogue,
                                                      cutlass::gemm::PersistentScheduler>;
  using Adapter = cutlass::gemm::device::GemmUniversalAdapter<Kernel>;
};

inline bool aligned16(const void* ptr) { return reinterpret_cast<std::uintptr_t>(ptr) % 16 == 0; }

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

// The launch of one op for one dtype, over the index pack of its bias.
template <class Op, typename scalar_t, class Bias = std::make_index_sequence<Op::kBias ? 1 : 0>>
struct Launch;

template <class Op, typename scalar_t, std::size_t... I>
struct Launch<Op, scalar_t, std::index_sequence<I...>> {
  using E = typename Element<scalar_t>::type;

  // Runs the GEMM in configuration Config; false when CUTLASS does not take the problem.
  template <typename Config>
  static bool run_config(const E* a, const E* b, const Same<I, E>*... bias, E* c, E* acc_out, int m, int n, int k,
                         int batch, const cutlass::KernelHardwareInfo& hw, cudaStream_t stream) {
    using Shapes = Sm90Gemm<E, Config, Op>;
    using Gemm = typename Shapes::Adapter;
    using GemmKernel = typename Gemm::GemmKernel;
    const auto stride_a = cutlass::make_cute_packed_stride(typename GemmKernel::StrideA{}, make_shape(m, k, batch));
    const auto stride_b = cutlass::make_cute_packed_stride(typename GemmKernel::StrideB{}, make_shape(n, k, batch));
    const auto stride_c = cutlass::make_cute_packed_stride(typename GemmKernel::StrideD{}, make_shape(m, n, batch));
    typename Gemm::Arguments args{cutlass::gemm::GemmUniversalMode::kGemm,
                                  {m, n, k, batch},
                                  {a, stride_a, b, stride_b},
                                  {{}, nullptr, stride_c, c, stride_c},
                                  hw};
    // The EVT's arguments follow its tree: {accumulator, bias row broadcast (an op with a bias), compute
    // node}, where the accumulator of an op that saves it is {fetch, aux store}.
    if constexpr (Op::kSavesAcc) {
      const auto stride_acc = cutlass::make_cute_packed_stride(typename Shapes::AuxShape::Stride{}, make_shape(m, n, batch));
      const typename Shapes::Acc::Arguments acc_args{{}, {acc_out, stride_acc}};
      if constexpr (Op::kBias) {
        args.epilogue.thread = {acc_args, {bias...}, {}};
      } else {
        args.epilogue.thread = {acc_args, {}};
      }
    } else if constexpr (Op::kBias) {
      args.epilogue.thread = {{}, {bias...}, {}};
      (void)acc_out;
    } else {
      (void)acc_out;
    }
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

  // C = Op::epilogue(A @ B[, bias]) for the problem p on an sm_90 `device`, and with acc_out (an op with
  // Op::kSavesAcc, training) the accumulator; false, having launched nothing, when the problem is one
  // this path does not take.
  template <class Problem>
  static bool run(const scalar_t* a, const scalar_t* b, const Same<I, scalar_t>*... bias, scalar_t* c, const Problem& p,
                  int device, cudaStream_t stream, scalar_t* acc_out = nullptr) {
    // TMA reads rows that start on 16-byte boundaries; CUTLASS checks the shapes, the pointers are
    // checked here. K = 0 is left to the hand-written kernels.
    constexpr int64_t kAlign = 16 / sizeof(E);
    if (p.k == 0 || p.k % kAlign != 0 || p.n % kAlign != 0 || !aligned16(a) || !aligned16(b) || !aligned16(c) ||
        !aligned16(acc_out) || !(aligned16(bias) && ...)) {
      return false;
    }
    if (p.m > INT32_MAX || p.n > INT32_MAX || p.k > INT32_MAX || p.batch > INT32_MAX) {
      return false;
    }
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
    const int m = static_cast<int>(p.m), n = static_cast<int>(p.n), k = static_cast<int>(p.k);
    const int batch = static_cast<int>(p.batch);
    const auto* ea = reinterpret_cast<const E*>(a);
    const auto* eb = reinterpret_cast<const E*>(b);
    auto* ec = reinterpret_cast<E*>(c);
    auto* eacc = reinterpret_cast<E*>(acc_out);
    // Large's tiles over all batches: when they would leave more than half of the SMs idle, Tiny's
    // tiles (a quarter of the size) spread the problem wider.
    const int64_t large_tiles = ((p.m + 127) / 128) * ((p.n + 255) / 256) * p.batch;
    if (2 * large_tiles < hw.sm_count) {
      return run_config<Tiny>(ea, eb, reinterpret_cast<const E*>(bias)..., ec, eacc, m, n, k, batch, hw, stream);
    }
    return run_config<Large>(ea, eb, reinterpret_cast<const E*>(bias)..., ec, eacc, m, n, k, batch, hw, stream);
  }
};

}  // namespace
}  // namespace gemm_sm90
}  // namespace kg
