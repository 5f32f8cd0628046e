#pragma once
// kernelgen/gemm.cuh: the matrix-product kernels every matmul op of this package shares, C = A @ B
// with the op's epilogue applied where C is stored, and their launch. An op's own file
// (csrc/<op>/cuda/<op>_kernel.cu) holds only what is particular to it: its epilogue (an `Op` struct)
// and one instantiation per dtype.
//
// Two kernels, both tiled through shared memory:
//   * simt_kernel, for every dtype: each block computes a 128 x 128 tile of C, each thread an
//     8 x 8 sub-tile held in registers (register blocking: 16 shared-memory reads feed 64 FMAs).
//   * tensor_core_kernel, for float16/bfloat16 on sm_80+: each warp computes a 64 x 32 tile with
//     mma.sync m16n8k16 tensor-core instructions fed by ldmatrix, accumulating in float. The next
//     K-slice of A and B is loaded from global memory into registers while the current one is
//     multiplied.
// Both handle any M, N, K (K = 0 too: the epilogue then sees acc = 0): loads outside the matrices
// read zeros, stores outside are skipped, and every offset that is a product of dimensions is
// computed in int64. Both apply the epilogue (Op::epilogue) to each accumulator as it is stored, in
// float (double for float64), and round once. The accumulation order is fixed, so results are
// bitwise deterministic.
//
// An op is a struct with kBias (whether it takes a 1-D bias, one value per column of C), kSavesAcc
// (whether its training forward also stores the accumulator, below) and
// `template <typename T> static T epilogue(T acc[, T bias])`. A bias is passed as a pack of zero or one
// pointers (the index pack I...), so an op without one has no bias parameter at all. Everything here
// is in an anonymous namespace: each op's kernel file compiles its own copy, as if written there.
//
// Training: an op whose generated backward reads the accumulator (Op::kSavesAcc) passes a second
// output, `acc_out`, in its training forward. Each kernel then stores the accumulator there too, rounded
// to the inputs' dtype, in the same pass: the backward needs it, and recomputing it would cost a third
// product. Elsewhere acc_out is null and nothing more is stored.
// The backward itself (epilogue_backward_kernel, at the end) is an elementwise pass with a column sum
// for the bias.

#include <cuda_runtime_api.h>
// STD_CUDA_CHECK, STD_CUDA_KERNEL_LAUNCH_CHECK: C10_CUDA_CHECK's stable twins (the same messages,
// device-side assert hints included); they need -DUSE_CUDA, which _build.py sets.
#include <torch/csrc/stable/macros.h>
#include <torch/headeronly/util/BFloat16.h>
#include <torch/headeronly/util/Half.h>

#include <cstddef>
#include <cstdint>
#include <type_traits>
#include <utility>

#include "../opmath.h"

namespace kg {
namespace gemm {
namespace {

// One bias pointer per index of the pack I... (none, or one for an op with a bias).
template <std::size_t, typename T>
using Same = T;

__host__ __device__ constexpr int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

// ---- SIMT kernel (all dtypes) -----------------------------------------------------------------
namespace simt {
constexpr int kBM = 128;  // rows of C per block
constexpr int kBN = 128;  // columns of C per block
constexpr int kBK = 8;    // K-slice staged in shared memory per step
constexpr int kTM = 8;    // rows of C per thread
constexpr int kTN = 8;    // columns of C per thread
constexpr int kRowsOfThreads = kBM / kTM;  // 16
constexpr int kColsOfThreads = kBN / kTN;  // 16
constexpr int kThreads = kRowsOfThreads * kColsOfThreads;  // 256
constexpr int kPad = 4;  // As rows are kBM + 4 long: the transposing stores below hit distinct banks
}  // namespace simt

template <class Op, typename scalar_t, std::size_t... I>
__global__ void __launch_bounds__(simt::kThreads)
simt_kernel(const scalar_t* __restrict__ a, const scalar_t* __restrict__ b, const Same<I, scalar_t>* __restrict__... bias,
            scalar_t* __restrict__ c, scalar_t* __restrict__ acc_out,
            int64_t m, int64_t n, int64_t k) {
  using namespace simt;
  using acc_t = opmath::opmath_type<scalar_t>;
  // Shared tiles hold op-math values, converted once on load. A is stored transposed (k-major) so
  // that the inner loop reads one k-row of A and one k-row of B.
  __shared__ acc_t as[kBK][kBM + kPad];
  __shared__ acc_t bs[kBK][kBN];

  const int64_t batch = blockIdx.z;
  a += batch * m * k;
  b += batch * k * n;
  c += batch * m * n;
  if constexpr (Op::kSavesAcc) {
    acc_out += acc_out != nullptr ? batch * m * n : 0;
  }
  const int64_t m0 = static_cast<int64_t>(blockIdx.y) * kBM;
  const int64_t n0 = static_cast<int64_t>(blockIdx.x) * kBN;
  const int tid = threadIdx.x;
  // Thread (ty, tx) owns rows ty + 16 i and columns tx + 16 j of the tile. Interleaving (rather
  // than 8 adjacent columns) makes a warp's shared-memory reads of B hit 16 consecutive words (no
  // bank conflicts) and its global stores of C contiguous.
  const int ty = tid / kColsOfThreads;
  const int tx = tid % kColsOfThreads;

  acc_t acc[kTM][kTN];
#pragma unroll
  for (int i = 0; i < kTM; ++i) {
#pragma unroll
    for (int j = 0; j < kTN; ++j) {
      acc[i][j] = acc_t(0);
    }
  }

  for (int64_t k0 = 0; k0 < k; k0 += kBK) {
    // Stage A[m0:m0+128, k0:k0+8] (transposed) and B[k0:k0+8, n0:n0+128]; zeros outside.
    for (int idx = tid; idx < kBM * kBK; idx += kThreads) {
      const int row = idx / kBK;
      const int kk = idx % kBK;
      const int64_t gm = m0 + row;
      const int64_t gk = k0 + kk;
      as[kk][row] = (gm < m && gk < k) ? static_cast<acc_t>(a[gm * k + gk]) : acc_t(0);
    }
    for (int idx = tid; idx < kBK * kBN; idx += kThreads) {
      const int kk = idx / kBN;
      const int col = idx % kBN;
      const int64_t gk = k0 + kk;
      const int64_t gn = n0 + col;
      bs[kk][col] = (gk < k && gn < n) ? static_cast<acc_t>(b[gk * n + gn]) : acc_t(0);
    }
    __syncthreads();
#pragma unroll
    for (int kk = 0; kk < kBK; ++kk) {
      acc_t a_reg[kTM];
      acc_t b_reg[kTN];
#pragma unroll
      for (int i = 0; i < kTM; ++i) {
        a_reg[i] = as[kk][ty + i * kRowsOfThreads];
      }
#pragma unroll
      for (int j = 0; j < kTN; ++j) {
        b_reg[j] = bs[kk][tx + j * kColsOfThreads];
      }
#pragma unroll
      for (int i = 0; i < kTM; ++i) {
#pragma unroll
        for (int j = 0; j < kTN; ++j) {
          acc[i][j] += a_reg[i] * b_reg[j];
        }
      }
    }
    __syncthreads();  // everyone is done reading before the next slice overwrites the tiles
  }

#pragma unroll
  for (int i = 0; i < kTM; ++i) {
    const int64_t gm = m0 + ty + i * kRowsOfThreads;
#pragma unroll
    for (int j = 0; j < kTN; ++j) {
      const int64_t gn = n0 + tx + j * kColsOfThreads;
      if (gm < m && gn < n) {
        // Epilogue math in opmath::kernel_math_type: fast division and exp for 16-bit outputs (../opmath.h).
        c[gm * n + gn] = static_cast<scalar_t>(static_cast<acc_t>(
            Op::template epilogue<opmath::kernel_math_type<scalar_t, acc_t>>(acc[i][j], static_cast<acc_t>(bias[gn])...)));
        if constexpr (Op::kSavesAcc) {
          if (acc_out != nullptr) {
            acc_out[gm * n + gn] = static_cast<scalar_t>(acc[i][j]);
          }
        }
      }
    }
  }
}

// ---- Tensor-core kernel (float16 / bfloat16, sm_80+) ------------------------------------------
namespace tc {
constexpr int kBM = 128;     // rows of C per block
constexpr int kBN = 128;     // columns of C per block
constexpr int kBK = 32;      // K-slice per step: two 16-deep MMA steps
constexpr int kWarpsM = 2;   // warps along M
constexpr int kWarpsN = 4;   // warps along N
constexpr int kWM = kBM / kWarpsM;  // 64 rows of C per warp
constexpr int kWN = kBN / kWarpsN;  // 32 columns of C per warp
constexpr int kTilesM = kWM / 16;   // 4 m16n8k16 tiles down
constexpr int kTilesN = kWN / 8;    // 4 m16n8k16 tiles across
constexpr int kThreads = 32 * kWarpsM * kWarpsN;  // 256
// Shared-memory rows are padded by 8 elements (16 bytes): the 8 rows of an 8 x 8 matrix that one
// ldmatrix reads then start 80 (A) or 272 (B) bytes apart, in 8 different groups of 4 banks, so
// the read takes one pass. Unpadded, every row would start in the same bank and the read would
// serialize 8 ways. Row pitches stay multiples of 16 bytes, as ldmatrix requires.
constexpr int kPad = 8;
constexpr int kChunk = 8;  // elements per 16-byte global load
// Ask the compiler to fit two blocks per SM (at most 128 registers per thread): with one block,
// 8 warps are too few to hide the latency of the global loads and of the tensor-core pipeline.
constexpr int kMinBlocksPerSm = 2;
constexpr int kChunksA = kBM * kBK / kChunk / kThreads;  // 2 per thread
constexpr int kChunksB = kBK * kBN / kChunk / kThreads;  // 2 per thread
}  // namespace tc


// Four 8 x 8 matrices of 16-bit elements from shared memory into registers, in the layout that
// mma.sync expects; lane l gives the address of one matrix row (lanes 0-7: matrix 0, ...).
// kTranspose: each thread receives a column pair instead of a row pair.
template <bool kTranspose>
__device__ __forceinline__ void ldmatrix_x4(uint32_t (&r)[4], const void* row_address) {
  const auto address = static_cast<uint32_t>(__cvta_generic_to_shared(row_address));
  if constexpr (kTranspose) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(address) : "memory");
  } else {
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(address) : "memory");
  }
}

// d += a * b for one 16 x 8 tile of C and a 16-deep slice of K, on the tensor cores, accumulating
// in float. a: a 16 x 16 A tile (row-major), b: a 16 x 8 B tile (column-major), as ldmatrix loads
// them; each thread holds d[0..1] at (lane / 4, 2 * (lane % 4) + {0, 1}) and d[2..3] 8 rows down.
template <typename scalar_t>
__device__ __forceinline__ void mma_16x8x16(float (&d)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1) {
  if constexpr (std::is_same_v<scalar_t, torch::headeronly::BFloat16>) {
    asm("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
        "{%0, %1, %2, %3};\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
  } else {
    static_assert(std::is_same_v<scalar_t, torch::headeronly::Half>, "tensor cores: float16 or bfloat16 only");
    asm("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
        "{%0, %1, %2, %3};\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
  }
}

// 8 elements, moved as their raw 16-bit patterns: a zero pattern is 0.0 in both float16 and
// bfloat16, and no conversion is involved (torch builds with the implicit half conversions off).
struct alignas(16) Chunk {
  uint16_t bits[tc::kChunk];
};

// Loads 8 consecutive elements of row `row`, starting at column `col`, of a rows x cols row-major
// matrix, with zeros outside it. kVector: one 16-byte load (the caller guarantees that cols is a
// multiple of 8 and the base is 16-byte aligned, so a chunk is wholly inside or wholly outside).
template <bool kVector>
__device__ __forceinline__ Chunk load_chunk(const uint16_t* __restrict__ base, int64_t rows, int64_t cols,
                                            int64_t row, int64_t col) {
  Chunk chunk;
  if constexpr (kVector) {
    if (row < rows && col < cols) {
      return *reinterpret_cast<const Chunk*>(base + row * cols + col);
    }
#pragma unroll
    for (int e = 0; e < tc::kChunk; ++e) {
      chunk.bits[e] = 0;
    }
  } else {
#pragma unroll
    for (int e = 0; e < tc::kChunk; ++e) {
      chunk.bits[e] = (row < rows && col + e < cols) ? base[row * cols + col + e] : uint16_t{0};
    }
  }
  return chunk;
}

template <class Op, typename scalar_t, bool kVector, std::size_t... I>
__global__ void __launch_bounds__(tc::kThreads, tc::kMinBlocksPerSm)
tensor_core_kernel(const scalar_t* __restrict__ a_in, const scalar_t* __restrict__ b_in,
                   const Same<I, scalar_t>* __restrict__... bias, scalar_t* __restrict__ c, scalar_t* __restrict__ acc_out,
                   int64_t m, int64_t n, int64_t k) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 800
  __trap();  // never launched below sm_80 (see the launcher); m16n8k16 MMA needs sm_80
#else
  using namespace tc;
  // Raw 16-bit patterns: the tensor cores read them as float16 or bfloat16.
  __shared__ __align__(128) uint16_t as[2][kBM][kBK + kPad];  // double-buffered A slice
  __shared__ __align__(128) uint16_t bs[2][kBK][kBN + kPad];  // double-buffered B slice

  const int64_t batch = blockIdx.z;
  const uint16_t* a = reinterpret_cast<const uint16_t*>(a_in) + batch * m * k;
  const uint16_t* b = reinterpret_cast<const uint16_t*>(b_in) + batch * k * n;
  c += batch * m * n;
  if constexpr (Op::kSavesAcc) {
    acc_out += acc_out != nullptr ? batch * m * n : 0;
  }
  const int64_t m0 = static_cast<int64_t>(blockIdx.y) * kBM;
  const int64_t n0 = static_cast<int64_t>(blockIdx.x) * kBN;
  const int tid = threadIdx.x;
  const int warp = tid / 32;
  const int lane = tid % 32;
  const int warp_m = warp / kWarpsN;
  const int warp_n = warp % kWarpsN;

  float acc[kTilesM][kTilesN][4];
#pragma unroll
  for (int i = 0; i < kTilesM; ++i) {
#pragma unroll
    for (int j = 0; j < kTilesN; ++j) {
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        acc[i][j][e] = 0.0f;
      }
    }
  }

  // Each thread moves kChunksA chunks of the A slice and kChunksB of the B slice per step.
  Chunk a_stage[kChunksA];
  Chunk b_stage[kChunksB];
  auto load_slice = [&](int64_t k0) {
#pragma unroll
    for (int i = 0; i < kChunksA; ++i) {
      const int idx = tid + i * kThreads;
      const int row = idx / (kBK / kChunk);
      const int col = (idx % (kBK / kChunk)) * kChunk;
      a_stage[i] = load_chunk<kVector>(a, m, k, m0 + row, k0 + col);
    }
#pragma unroll
    for (int i = 0; i < kChunksB; ++i) {
      const int idx = tid + i * kThreads;
      const int row = idx / (kBN / kChunk);
      const int col = (idx % (kBN / kChunk)) * kChunk;
      b_stage[i] = load_chunk<kVector>(b, k, n, k0 + row, n0 + col);
    }
  };
  auto store_slice = [&](int buf) {
#pragma unroll
    for (int i = 0; i < kChunksA; ++i) {
      const int idx = tid + i * kThreads;
      *reinterpret_cast<Chunk*>(&as[buf][idx / (kBK / kChunk)][(idx % (kBK / kChunk)) * kChunk]) = a_stage[i];
    }
#pragma unroll
    for (int i = 0; i < kChunksB; ++i) {
      const int idx = tid + i * kThreads;
      *reinterpret_cast<Chunk*>(&bs[buf][idx / (kBN / kChunk)][(idx % (kBN / kChunk)) * kChunk]) = b_stage[i];
    }
  };

  const int64_t steps = ceil_div(k, kBK);
  if (steps > 0) {
    load_slice(0);
    store_slice(0);
  }
  __syncthreads();
  for (int64_t step = 0; step < steps; ++step) {
    const int buf = static_cast<int>(step & 1);
    if (step + 1 < steps) {
      load_slice((step + 1) * kBK);  // global loads in flight while the tensor cores work
    }
#pragma unroll
    for (int kk = 0; kk < kBK; kk += 16) {
      // Both loads take 16 rows from lane % 16 and a column block of 8 from lane / 16: for A the
      // four 8 x 8 matrices of a 16 x 16 tile; for B (rows are k) two 16 x 8 tiles, transposed.
      uint32_t a_frag[kTilesM][4];
      uint32_t b_frag[kTilesN / 2][4];
#pragma unroll
      for (int i = 0; i < kTilesM; ++i) {
        ldmatrix_x4<false>(a_frag[i], &as[buf][warp_m * kWM + i * 16 + lane % 16][kk + (lane / 16) * 8]);
      }
#pragma unroll
      for (int j = 0; j < kTilesN / 2; ++j) {
        ldmatrix_x4<true>(b_frag[j], &bs[buf][kk + lane % 16][warp_n * kWN + j * 16 + (lane / 16) * 8]);
      }
#pragma unroll
      for (int i = 0; i < kTilesM; ++i) {
#pragma unroll
        for (int j = 0; j < kTilesN; ++j) {
          const uint32_t(&b)[4] = b_frag[j / 2];
          mma_16x8x16<scalar_t>(acc[i][j], a_frag[i], b[(j % 2) * 2], b[(j % 2) * 2 + 1]);
        }
      }
    }
    if (step + 1 < steps) {
      // The other buffer was last read in the previous step, before the barrier that ended it.
      store_slice(buf ^ 1);
    }
    __syncthreads();
  }

  // Epilogue (Op::epilogue), straight from the accumulators. Each thread holds, per 16 x 8 tile, two pairs of
  // adjacent columns in rows lane / 4 and lane / 4 + 8; stores outside C are skipped.
#pragma unroll
  for (int i = 0; i < kTilesM; ++i) {
#pragma unroll
    for (int j = 0; j < kTilesN; ++j) {
      const int64_t row = m0 + warp_m * kWM + i * 16 + lane / 4;
      const int64_t col = n0 + warp_n * kWN + j * 8 + (lane % 4) * 2;
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const int64_t gm = row + (e / 2) * 8;
        const int64_t gn = col + e % 2;
        if (gm < m && gn < n) {
          c[gm * n + gn] = static_cast<scalar_t>(static_cast<float>(
              Op::template epilogue<opmath::fast_float>(acc[i][j][e], static_cast<float>(bias[gn])...)));
          if constexpr (Op::kSavesAcc) {
            if (acc_out != nullptr) {
              acc_out[gm * n + gn] = static_cast<scalar_t>(acc[i][j][e]);
            }
          }
        }
      }
    }
  }
#endif
}

inline bool is_aligned16(const void* ptr) { return reinterpret_cast<std::uintptr_t>(ptr) % 16 == 0; }

template <typename scalar_t>
constexpr bool kTensorCoreType = std::is_same_v<scalar_t, torch::headeronly::Half> || std::is_same_v<scalar_t, torch::headeronly::BFloat16>;

// Whether `device` is a Hopper GPU (sm_90), where an op's CUTLASS path runs when it is built.
inline bool is_sm90(int device) {
  int major = 0;
  int minor = 0;
  STD_CUDA_CHECK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device));
  STD_CUDA_CHECK(cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, device));
  return major == 9 && minor == 0;
}

// The launch of one op for one dtype, over the index pack of its bias.
template <class Op, typename scalar_t, class Bias = std::make_index_sequence<Op::kBias ? 1 : 0>>
struct Launch;

template <class Op, typename scalar_t, std::size_t... I>
struct Launch<Op, scalar_t, std::index_sequence<I...>> {
  // C = epilogue(A @ B[, bias]) for the problem p (its batch, m, n, k), on `device` and `stream`:
  // the tensor-core kernel for float16/bfloat16 on sm_80 and newer, the SIMT kernel otherwise. With
  // acc_out (an op with Op::kSavesAcc, training), the accumulator too.
  template <class Problem>
  static void run(const scalar_t* a, const scalar_t* b, const Same<I, scalar_t>*... bias, scalar_t* c, const Problem& p,
                  int device, cudaStream_t stream, scalar_t* acc_out = nullptr) {
    if constexpr (kTensorCoreType<scalar_t>) {
      int major = 0;
      STD_CUDA_CHECK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device));
      if (major >= 8) {
        const dim3 grid(static_cast<unsigned>(ceil_div(p.n, tc::kBN)), static_cast<unsigned>(ceil_div(p.m, tc::kBM)),
                        static_cast<unsigned>(p.batch));
        // 16-byte loads need rows that start on 16-byte boundaries: K and N multiples of 8 and
        // aligned base pointers (a view such as x[1:] is not).
        const bool vector = p.k % tc::kChunk == 0 && p.n % tc::kChunk == 0 && is_aligned16(a) && is_aligned16(b);
        if (vector) {
          tensor_core_kernel<Op, scalar_t, true, I...><<<grid, tc::kThreads, 0, stream>>>(a, b, bias..., c, acc_out, p.m, p.n, p.k);
        } else {
          tensor_core_kernel<Op, scalar_t, false, I...><<<grid, tc::kThreads, 0, stream>>>(a, b, bias..., c, acc_out, p.m, p.n, p.k);
        }
        STD_CUDA_KERNEL_LAUNCH_CHECK();
        return;
      }
    } else {
      (void)device;
    }
    const dim3 grid(static_cast<unsigned>(ceil_div(p.n, simt::kBN)), static_cast<unsigned>(ceil_div(p.m, simt::kBM)),
                    static_cast<unsigned>(p.batch));
    simt_kernel<Op, scalar_t, I...><<<grid, simt::kThreads, 0, stream>>>(a, b, bias..., c, acc_out, p.m, p.n, p.k);
    // Launches are asynchronous: check here, or a bad launch surfaces at some later, unrelated call.
    STD_CUDA_KERNEL_LAUNCH_CHECK();
  }
};

// V adjacent elements, moved as one access of V * sizeof(T) bytes.
template <typename T, int V>
struct alignas(sizeof(T) * V) Vec {
  T v[V];
};

// ---- The epilogue alone, after a library's product (float32, float64) -------------------------
// float32 and float64 take cuBLAS's product (the op's tensor side calls kernelgen::library_product, ATen's matmul) and then
// this pass: out = epilogue(acc[, bias]) element by element over rows x n, row-major, where out may be acc
// itself (the inference forward overwrites the product in place). cuBLAS's float32 product runs at about
// twice the SIMT kernel's speed and its float64 product uses the FP64 tensor cores; this pass reads and
// writes each element once, a few per cent of the product's time. Each thread moves V adjacent elements
// with one 16-byte access and strides over the matrix; a bias value is found by its column, the flat
// index modulo n, computed once per access and stepped from there.
namespace epi {
constexpr int kThreads = 256;
constexpr int kBlocksPerSm = 8;
}  // namespace epi

template <class Op, typename scalar_t, int V, std::size_t... I>
__global__ void __launch_bounds__(epi::kThreads)
epilogue_kernel(const scalar_t* acc, const Same<I, scalar_t>* __restrict__... bias, scalar_t* out, int64_t total,
                int64_t n) {
  using acc_t = opmath::opmath_type<scalar_t>;
  using math_t = opmath::kernel_math_type<scalar_t, acc_t>;
  using vec_t = Vec<scalar_t, V>;
  const int64_t stride = static_cast<int64_t>(gridDim.x) * epi::kThreads * V;
  for (int64_t first = (static_cast<int64_t>(blockIdx.x) * epi::kThreads + threadIdx.x) * V; first < total;
       first += stride) {
    int64_t col = first % n;
    vec_t x;
    const bool whole = first + V <= total;
    if (whole) {
      x = *reinterpret_cast<const vec_t*>(acc + first);
    } else {
#pragma unroll
      for (int e = 0; e < V; ++e) {
        x.v[e] = first + e < total ? acc[first + e] : scalar_t(0);
      }
    }
    vec_t y;
#pragma unroll
    for (int e = 0; e < V; ++e) {
      y.v[e] = static_cast<scalar_t>(static_cast<acc_t>(
          Op::template epilogue<math_t>(static_cast<acc_t>(x.v[e]), static_cast<acc_t>(bias[col])...)));
      col = col + 1 == n ? 0 : col + 1;
    }
    if (whole) {
      *reinterpret_cast<vec_t*>(out + first) = y;
    } else {
#pragma unroll
      for (int e = 0; e < V; ++e) {
        if (first + e < total) {
          out[first + e] = y.v[e];
        }
      }
    }
  }
}

// The launch of one op's epilogue pass for one dtype, over the index pack of its bias.
template <class Op, typename scalar_t, class Bias = std::make_index_sequence<Op::kBias ? 1 : 0>>
struct EpilogueLaunch;

template <class Op, typename scalar_t, std::size_t... I>
struct EpilogueLaunch<Op, scalar_t, std::index_sequence<I...>> {
  // out = epilogue(acc[, bias]) over total elements whose rows are n long (out may be acc); total, n >= 1.
  static void run(const scalar_t* acc, const Same<I, scalar_t>*... bias, scalar_t* out, int64_t total, int64_t n,
                  int device, cudaStream_t stream) {
    int sms = 0;
    STD_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
    constexpr int V = 16 / sizeof(scalar_t);
    const bool vector = is_aligned16(acc) && is_aligned16(out);
    const int vec = vector ? V : 1;
    const int64_t wanted = ceil_div(total, int64_t{epi::kThreads} * vec);
    const int64_t most = int64_t{sms} * epi::kBlocksPerSm;
    const unsigned blocks = static_cast<unsigned>(wanted < most ? wanted : most);
    if (vector) {
      epilogue_kernel<Op, scalar_t, V, I...><<<blocks, epi::kThreads, 0, stream>>>(acc, bias..., out, total, n);
    } else {
      epilogue_kernel<Op, scalar_t, 1, I...><<<blocks, epi::kThreads, 0, stream>>>(acc, bias..., out, total, n);
    }
    STD_CUDA_KERNEL_LAUNCH_CHECK();
  }
};

// ---- The epilogue's backward (an op with a generated backward) --------------------------------
// From the output's gradient and the stored accumulator, element by element (Op::grads, written by
// kernelgen from the epilogue): dacc = _grad * d out / d acc, the matrix that the backward's two
// products read (dL/dA = dacc @ B^T and dL/dB = A^T @ dacc, cuBLAS's, called by the op's Python
// backward), and with a bias its gradient, the column sums of _grad * d out / d bias. The pass is
// memory-bound: it reads each element of _grad and acc once and writes dacc once.
//
// A block covers a strip of kThreads * V adjacent columns and a slot of rows. Each thread owns V
// adjacent columns (one 16-byte load of _grad and one of acc per row) and adds its columns' bias
// contributions over the slot's rows in registers, kRowsPerStep rows at a time: the rows' loads are
// issued together, so each thread has 2 * kRowsPerStep loads in flight. Each slot writes one row of
// partial sums, and column_sum_kernel adds the slots in order. There are no atomics: the bias gradient
// is bitwise reproducible, on any GPU and whatever the launch.
namespace bwd {
constexpr int kThreads = 256;
// Rows a thread loads at once: 4 where the epilogue is light and the pass memory-bound; 1 where it is
// heavy (Op::kHeavy): its derivatives' math then hides the loads' latency, and four rows' worth of it
// would hold four times the values in registers (on an H100, one row is 1.15-1.35x faster for heavy
// epilogues in bfloat16, and 1.1-1.7x slower for light ones).
template <class Op>
constexpr int kRowsPerStep = Op::kHeavy ? 1 : 4;
// At least this many rows per slot: the partial sums then move under 1/16 of the pass's bytes.
constexpr int64_t kMinRowsPerSlot = 32;
// Blocks per SM the launch aims for (8 warps each).
constexpr int kBlocksPerSm = 4;
}  // namespace bwd

template <class Op, typename scalar_t, int V, std::size_t... I>
__global__ void __launch_bounds__(bwd::kThreads)
epilogue_backward_kernel(const scalar_t* __restrict__ grad, const scalar_t* __restrict__ acc,
                         const Same<I, scalar_t>* __restrict__... bias, scalar_t* __restrict__ dacc,
                         opmath::opmath_type<scalar_t>* __restrict__ partial, int64_t rows, int64_t n,
                         int64_t rows_per_slot) {
  using namespace bwd;
  using sum_t = opmath::opmath_type<scalar_t>;
  // float16 and bfloat16 compute in opmath::fast_float, as the forward kernels do (../opmath.h).
  using math_t = opmath::kernel_math_type<scalar_t, sum_t>;
  using vec_t = Vec<scalar_t, V>;
  const int64_t col = (static_cast<int64_t>(blockIdx.x) * kThreads + threadIdx.x) * V;
  if (col >= n) {
    return;  // the strip's last threads, past the last column (n is a multiple of V when V > 1)
  }
  const int64_t row_begin = static_cast<int64_t>(blockIdx.y) * rows_per_slot;
  const int64_t row_end = row_begin + rows_per_slot < rows ? row_begin + rows_per_slot : rows;
  // This thread's bias values, read once (none for an op without a bias).
  math_t bias_v[V] = {};
  if constexpr (sizeof...(I) > 0) {
    const scalar_t* bias_ptr[] = {bias...};
#pragma unroll
    for (int e = 0; e < V; ++e) {
      bias_v[e] = static_cast<math_t>(static_cast<sum_t>(bias_ptr[0][col + e]));
    }
  }
  sum_t bias_sum[V] = {};
  for (int64_t row0 = row_begin; row0 < row_end; row0 += kRowsPerStep<Op>) {
    vec_t g[kRowsPerStep<Op>];
    vec_t x[kRowsPerStep<Op>];
#pragma unroll
    for (int r = 0; r < kRowsPerStep<Op>; ++r) {
      if (row0 + r < row_end) {
        g[r] = *reinterpret_cast<const vec_t*>(grad + (row0 + r) * n + col);
        if constexpr (Op::kSavesAcc) {  // otherwise the derivatives do not read acc, and it is not stored
          x[r] = *reinterpret_cast<const vec_t*>(acc + (row0 + r) * n + col);
        }
      }
    }
#pragma unroll
    for (int r = 0; r < kRowsPerStep<Op>; ++r) {
      if (row0 + r < row_end) {
        vec_t d;
#pragma unroll
        for (int e = 0; e < V; ++e) {
          math_t de[Op::kGrads];
          const math_t ge = static_cast<math_t>(static_cast<sum_t>(g[r].v[e]));
          math_t xe = math_t(0.0f);
          if constexpr (Op::kSavesAcc) {
            xe = static_cast<math_t>(static_cast<sum_t>(x[r].v[e]));
          }
          if constexpr (sizeof...(I) > 0) {
            Op::template grads<math_t>(ge, xe, bias_v[e], de);
            // opmath::add_rn: rounded once and never merged with the product that made the term into an
            // FMA. The loop tests `dacc != nullptr` on every row, and the compiler may unswitch it into
            // two copies, one that stores dacc and one that does not, and contract the sum in one copy
            // only: the bias's gradient would then depend on which gradients were asked for.
            bias_sum[e] = opmath::add_rn(bias_sum[e], static_cast<sum_t>(de[Op::kGrads - 1]));
          } else {
            Op::template grads<math_t>(ge, xe, de);
          }
          d.v[e] = static_cast<scalar_t>(static_cast<sum_t>(de[0]));
        }
        if (dacc != nullptr) {
          *reinterpret_cast<vec_t*>(dacc + (row0 + r) * n + col) = d;
        }
      }
    }
  }
  if (partial != nullptr) {
#pragma unroll
    for (int e = 0; e < V; ++e) {
      partial[static_cast<int64_t>(blockIdx.y) * n + col + e] = bias_sum[e];
    }
  }
}

// out[j] = the sum of partial[s][j] over the slots s, in order, rounded once to the output's dtype.
template <typename scalar_t, typename sum_t>
__global__ void __launch_bounds__(bwd::kThreads)
column_sum_kernel(const sum_t* __restrict__ partial, int64_t slots, int64_t n, scalar_t* __restrict__ out) {
  const int64_t col = static_cast<int64_t>(blockIdx.x) * bwd::kThreads + threadIdx.x;
  if (col < n) {
    sum_t total = 0;
    for (int64_t s = 0; s < slots; ++s) {
      total += partial[s * n + col];
    }
    out[col] = static_cast<scalar_t>(total);
  }
}

// The launch of one op's epilogue backward for one dtype, over the index pack of its bias.
template <class Op, typename scalar_t, class Bias = std::make_index_sequence<Op::kBias ? 1 : 0>>
struct BackwardLaunch;

template <class Op, typename scalar_t, std::size_t... I>
struct BackwardLaunch<Op, scalar_t, std::index_sequence<I...>> {
  using sum_t = opmath::opmath_type<scalar_t>;

  // The slots (row ranges) of a launch over rows x n: enough blocks to fill `device` kBlocksPerSm
  // times over, at least kMinRowsPerSlot rows each. The bias's partial sums take slots(...) * n values.
  static int64_t rows_per_slot(int64_t rows, int64_t n, int device) {
    constexpr int V = 16 / sizeof(scalar_t);
    int sms = 0;
    STD_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
    const int64_t strips = ceil_div(n, int64_t{bwd::kThreads} * V);
    const int64_t wanted_slots = ceil_div(int64_t{sms} * bwd::kBlocksPerSm, strips);
    const int64_t per_slot = ceil_div(rows, wanted_slots);
    return per_slot > bwd::kMinRowsPerSlot ? per_slot : bwd::kMinRowsPerSlot;
  }
  static int64_t slots(int64_t rows, int64_t n, int device) { return ceil_div(rows, rows_per_slot(rows, n, device)); }

  // dacc (null: not asked for) and the bias's gradient dbias (null: not asked for, or no bias) from
  // grad and acc (null where Op::kSavesAcc is false), rows x n row-major, contiguous; partial holds slots(rows, n, device) * n values when
  // dbias is asked for. rows and n >= 1.
  static void run(const scalar_t* grad, const scalar_t* acc, const Same<I, scalar_t>*... bias, scalar_t* dacc,
                  scalar_t* dbias, sum_t* partial, int64_t rows, int64_t n, int device, cudaStream_t stream) {
    const int64_t per_slot = rows_per_slot(rows, n, device);
    const int64_t slot_count = ceil_div(rows, per_slot);
    sum_t* sums = dbias != nullptr ? partial : nullptr;
    // 16-byte accesses where every row starts on a 16-byte boundary; one element per thread otherwise.
    constexpr int V = 16 / sizeof(scalar_t);
    const bool vector = n % V == 0 && is_aligned16(grad) && (acc == nullptr || is_aligned16(acc)) &&
                        (dacc == nullptr || is_aligned16(dacc));
    const int vec = vector ? V : 1;
    const dim3 grid(static_cast<unsigned>(ceil_div(n, int64_t{bwd::kThreads} * vec)), static_cast<unsigned>(slot_count));
    if (vector) {
      epilogue_backward_kernel<Op, scalar_t, V, I...><<<grid, bwd::kThreads, 0, stream>>>(
          grad, acc, bias..., dacc, sums, rows, n, per_slot);
    } else {
      epilogue_backward_kernel<Op, scalar_t, 1, I...><<<grid, bwd::kThreads, 0, stream>>>(
          grad, acc, bias..., dacc, sums, rows, n, per_slot);
    }
    STD_CUDA_KERNEL_LAUNCH_CHECK();
    if (sums != nullptr) {
      column_sum_kernel<scalar_t, sum_t><<<static_cast<unsigned>(ceil_div(n, bwd::kThreads)), bwd::kThreads, 0, stream>>>(
          sums, slot_count, n, dbias);
      STD_CUDA_KERNEL_LAUNCH_CHECK();
    }
  }
};

}  // namespace
}  // namespace gemm
}  // namespace kg
