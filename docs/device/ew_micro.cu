// Elementwise kernel experiment (issue 4): variants of the generated kernel's loop, in plain CUDA
// (no torch headers, so it compiles in seconds), called through ctypes by ew_micro.py, which times
// them against torch.addcmul / torch.compile / copy in the same process.
//
//   nvcc -O3 -arch=sm_90 -Xptxas -v -shared -Xcompiler -fPIC -o ew_micro.so ew_micro.cu
// builds the round-2 variants (full grid; packs per thread and read-only loads, with erf_gelu);
// add -DROUND1 for the round-1 sweep too (grid, unroll, cache hints, fast math; results in
// docs/results/ew_micro.txt and ew_micro_round2.txt).
//
// Variant axes:
//   UNROLL  packs (16 bytes each) per thread and iteration, all loads issued before any math
//   GRID    0: grid-stride loop over 4 waves of resident blocks (the current template)
//           1: one block per UNROLL*256 packs, no loop (PyTorch's elementwise launch)
//   CACHE   0: plain loads and stores; 1: streaming (__ldcs / __stcs, evict-first);
//           2: read-only loads (__ldg, ld.global.nc: what const __restrict__ pointers compile to)
//   MATH    0: expf and IEEE division (the current template); 1: __expf, IEEE division;
//           2: __expf and __fdividef
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <cstring>

namespace {

constexpr int kThreads = 256;

template <typename T> struct Conv;
template <> struct Conv<float> {
  __device__ static float in(float x) { return x; }
  __device__ static float out(float x) { return x; }
};
template <> struct Conv<double> {
  __device__ static double in(double x) { return x; }
  __device__ static double out(double x) { return x; }
};
template <> struct Conv<__half> {
  __device__ static float in(__half x) { return __half2float(x); }
  __device__ static __half out(float x) { return __float2half_rn(x); }
};
template <> struct Conv<__nv_bfloat16> {
  __device__ static float in(__nv_bfloat16 x) { return __bfloat162float(x); }
  __device__ static __nv_bfloat16 out(float x) { return __float2bfloat16_rn(x); }
};
template <typename T> struct Acc { using type = float; };
template <> struct Acc<double> { using type = double; };

template <typename T>
struct alignas(16) Pack {
  static constexpr int kVec = 16 / sizeof(T);
  T v[kVec];
};

template <typename P, int CACHE>
__device__ __forceinline__ P load(const P* p) {
  if constexpr (CACHE == 0) {
    return *p;
  } else {
    int4 raw = CACHE == 1 ? __ldcs(reinterpret_cast<const int4*>(p)) : __ldg(reinterpret_cast<const int4*>(p));
    P r;
    memcpy(&r, &raw, sizeof(P));
    return r;
  }
}
template <typename P, int CACHE>
__device__ __forceinline__ void store(P* p, const P& v) {
  if constexpr (CACHE != 1) {
    *p = v;
  } else {
    int4 raw;
    memcpy(&raw, &v, sizeof(P));
    __stcs(reinterpret_cast<int4*>(p), raw);
  }
}

template <int MATH> struct Math;
template <> struct Math<0> {
  __device__ static float sigmoid(float x) { return 1.0f / (1.0f + expf(-x)); }
  __device__ static double sigmoid(double x) { return 1.0 / (1.0 + exp(-x)); }
};
template <> struct Math<1> {
  __device__ static float sigmoid(float x) { return 1.0f / (1.0f + __expf(-x)); }
  __device__ static double sigmoid(double x) { return 1.0 / (1.0 + exp(-x)); }
};
template <> struct Math<2> {
  __device__ static float sigmoid(float x) { return __fdividef(1.0f, 1.0f + __expf(-x)); }
  __device__ static double sigmoid(double x) { return 1.0 / (1.0 + exp(-x)); }
};

// Ops: N inputs, acc_t math.
template <int MATH> struct Copy {
  static constexpr int kIn = 1;
  template <typename A> __device__ static A f(const A* x) { return x[0]; }
};
template <int MATH> struct MulAdd {
  static constexpr int kIn = 3;
  template <typename A> __device__ static A f(const A* x) { return x[0] * x[1] + x[2]; }
};
template <int MATH> struct Quad4 {
  static constexpr int kIn = 4;
  template <typename A> __device__ static A f(const A* x) { return x[0] * x[1] + x[2] * x[3]; }
};
template <int MATH> struct Gelu {
  static constexpr int kIn = 1;
  template <typename A> __device__ static A f(const A* x) {
    return x[0] * Math<MATH>::sigmoid(A(1.702) * x[0]);
  }
};

template <int MATH> struct ErfGelu {
  static constexpr int kIn = 1;
  template <typename A> __device__ static A f(const A* x) {
    return A(0.5) * x[0] * (A(1) + erf(x[0] * A(0.7071067811865476)));
  }
};

struct Args {
  const void* in[4];
  void* out;
};

template <typename T, class Op, int UNROLL, int GRID, int CACHE>
__global__ void __launch_bounds__(kThreads, 4) kernel(Args args, int64_t n) {
  using P = Pack<T>;
  using A = typename Acc<T>::type;
  constexpr int kVec = P::kVec;
  constexpr int kIn = Op::kIn;
  const int64_t n_packs = n / kVec;
  const P* in[kIn];
#pragma unroll
  for (int j = 0; j < kIn; ++j) in[j] = static_cast<const P*>(args.in[j]);
  P* out = static_cast<P*>(args.out);

  const int64_t chunk = static_cast<int64_t>(kThreads) * UNROLL;
  for (int64_t base = blockIdx.x * chunk; base < n_packs; base += chunk * gridDim.x) {
    P v[kIn][UNROLL];
#pragma unroll
    for (int u = 0; u < UNROLL; ++u) {
      const int64_t p = base + threadIdx.x + u * kThreads;
      if (p < n_packs) {
#pragma unroll
        for (int j = 0; j < kIn; ++j) v[j][u] = load<P, CACHE>(in[j] + p);
      }
    }
#pragma unroll
    for (int u = 0; u < UNROLL; ++u) {
      const int64_t p = base + threadIdx.x + u * kThreads;
      if (p < n_packs) {
        P r;
#pragma unroll
        for (int k = 0; k < kVec; ++k) {
          A x[kIn];
#pragma unroll
          for (int j = 0; j < kIn; ++j) x[j] = Conv<T>::in(v[j][u].v[k]);
          r.v[k] = Conv<T>::out(Op::template f<A>(x));
        }
        store<P, CACHE>(out + p, r);
      }
    }
    if (GRID == 1) break;  // one block per chunk: no loop
  }
  // tail
  const T* const* sin = reinterpret_cast<const T* const*>(args.in);
  T* sout = static_cast<T*>(args.out);
  const int64_t first = static_cast<int64_t>(blockIdx.x) * kThreads + threadIdx.x;
  for (int64_t i = n_packs * kVec + first; i < n; i += static_cast<int64_t>(gridDim.x) * kThreads) {
    A x[kIn];
#pragma unroll
    for (int j = 0; j < kIn; ++j) x[j] = Conv<T>::in(sin[j][i]);
    sout[i] = Conv<T>::out(Op::template f<A>(x));
  }
}

template <typename T, class Op, int UNROLL, int GRID, int CACHE>
int launch(Args args, int64_t n, cudaStream_t stream) {
  auto k = kernel<T, Op, UNROLL, GRID, CACHE>;
  static int per_sm = [&] {
    int b = 0;
    cudaOccupancyMaxActiveBlocksPerMultiprocessor(&b, k, kThreads, 0);
    return b;
  }();
  int dev = 0, sms = 0;
  cudaGetDevice(&dev);
  cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev);
  const int64_t n_packs = n / Pack<T>::kVec;
  const int64_t chunk = static_cast<int64_t>(kThreads) * UNROLL;
  int64_t blocks = (n_packs + chunk - 1) / chunk;
  if (GRID == 0) blocks = blocks < 4LL * sms * per_sm ? blocks : 4LL * sms * per_sm;
  if (blocks < 1) blocks = 1;
  k<<<static_cast<unsigned>(blocks), kThreads, 0, stream>>>(args, n);
  return static_cast<int>(cudaGetLastError()) * 1000 + per_sm;
}

}  // namespace

// A flat table of variants; ew_micro.py reads the names and calls by index.
using LaunchFn = int (*)(Args, int64_t, cudaStream_t);
struct Entry {
  const char* name;
  LaunchFn fn;
};

#define V(T, TN, OP, ON, M, U, G, C) \
  {#ON " " TN " m" #M " u" #U " g" #G " c" #C, &launch<T, OP<M>, U, G, C>}

#define SWEEP_LOOP(T, TN, OP, ON, M) \
  V(T, TN, OP, ON, M, 1, 0, 0), V(T, TN, OP, ON, M, 1, 1, 0), V(T, TN, OP, ON, M, 1, 0, 1), \
  V(T, TN, OP, ON, M, 1, 1, 1), V(T, TN, OP, ON, M, 2, 0, 0), V(T, TN, OP, ON, M, 2, 1, 0), \
  V(T, TN, OP, ON, M, 2, 0, 1), V(T, TN, OP, ON, M, 4, 0, 0), V(T, TN, OP, ON, M, 4, 1, 0)

#define PER_TYPE(T, TN) \
  SWEEP_LOOP(T, TN, MulAdd, muladd, 0), SWEEP_LOOP(T, TN, Quad4, quad4, 0), \
  SWEEP_LOOP(T, TN, Gelu, gelu, 0), SWEEP_LOOP(T, TN, Copy, copy, 0), \
  V(T, TN, Gelu, gelu, 1, 1, 0, 0), V(T, TN, Gelu, gelu, 1, 2, 0, 0), V(T, TN, Gelu, gelu, 1, 1, 1, 0), \
  V(T, TN, Gelu, gelu, 1, 2, 1, 0), V(T, TN, Gelu, gelu, 2, 1, 0, 0), V(T, TN, Gelu, gelu, 2, 2, 0, 0), \
  V(T, TN, Gelu, gelu, 2, 1, 1, 0), V(T, TN, Gelu, gelu, 2, 2, 1, 0)

// Second round: the full grid only, for the unary ops with transcendental functions.
#define SWEEP_FULL(T, TN, OP, ON, M) \
  V(T, TN, OP, ON, M, 1, 1, 0), V(T, TN, OP, ON, M, 1, 1, 2), V(T, TN, OP, ON, M, 2, 1, 0), \
  V(T, TN, OP, ON, M, 2, 1, 2), V(T, TN, OP, ON, M, 4, 1, 0), V(T, TN, OP, ON, M, 4, 1, 2)

#define ROUND2(T, TN) \
  SWEEP_FULL(T, TN, Gelu, gelu, 0), SWEEP_FULL(T, TN, ErfGelu, erfgelu, 0), SWEEP_FULL(T, TN, Copy, copy, 0), \
  SWEEP_FULL(T, TN, MulAdd, muladd, 0)

static const Entry kEntries[] = {
    ROUND2(float, "float32"),
    ROUND2(__half, "float16"),
    ROUND2(__nv_bfloat16, "bfloat16"),
    ROUND2(double, "float64"),
#ifdef ROUND1
    PER_TYPE(float, "float32"),
    PER_TYPE(__half, "float16"),
    PER_TYPE(__nv_bfloat16, "bfloat16"),
    SWEEP_LOOP(double, "float64", MulAdd, muladd, 0),
    SWEEP_LOOP(double, "float64", Gelu, gelu, 0),
#endif
};

extern "C" int ew_count() { return sizeof(kEntries) / sizeof(kEntries[0]); }
extern "C" const char* ew_name(int i) { return kEntries[i].name; }
extern "C" int ew_launch(int i, const void* a, const void* b, const void* c, const void* d, void* out,
                         int64_t n, void* stream) {
  Args args{{a, b, c, d}, out};
  return kEntries[i].fn(args, n, static_cast<cudaStream_t>(stream));
}
