#pragma once
// opmath.h: the math functions an elementwise expression may call, for float and double.
//
// Every function is __host__ __device__, so each op's expression in csrc/<op>/<op>.h compiles for
// the CPU loop (g++) and the CUDA kernel (nvcc) alike. Arguments are in op-math precision:
// float16 and bfloat16 inputs are widened to float before the expression runs, because half
// arithmetic loses accuracy at every step and GPUs compute float as fast.

// Header-only: the CUDA kernels include this file too, and must not see any tensor header.
#include <torch/headeronly/util/BFloat16.h>
#include <torch/headeronly/util/Half.h>

#include <cmath>

#if defined(__CUDACC__)
#define OPMATH_FN __host__ __device__ __forceinline__
#else
#define OPMATH_FN inline
#endif

namespace  {
namespace opmath {

// The op-math type of a storage type: float for float16 and bfloat16 (each element is widened
// once, computed in float and rounded once), the type itself otherwise. It replaces
// at::opmath_type (ATen/OpMathType.h), which is not part of the stable ABI.
template <typename T>
struct OpMathType {
  using type = T;
};
template <>
struct OpMathType<torch::headeronly::Half> {
  using type = float;
};
template <>
struct OpMathType<torch::headeronly::BFloat16> {
  using type = float;
};
template <typename T>
using opmath_type = typename OpMathType<T>::type;

OPMATH_FN float exp(float x) { return ::expf(x); }
OPMATH_FN double exp(double x) { return ::exp(x); }
OPMATH_FN float log(float x) { return ::logf(x); }
OPMATH_FN double log(double x) { return ::log(x); }
OPMATH_FN float sqrt(float x) { return ::sqrtf(x); }
OPMATH_FN double sqrt(double x) { return ::sqrt(x); }
#if defined(__CUDA_ARCH__)
OPMATH_FN float rsqrt(float x) { return ::rsqrtf(x); }
OPMATH_FN double rsqrt(double x) { return ::rsqrt(x); }
#else
OPMATH_FN float rsqrt(float x) { return 1.0f / ::sqrtf(x); }
OPMATH_FN double rsqrt(double x) { return 1.0 / ::sqrt(x); }
#endif
OPMATH_FN float tanh(float x) { return ::tanhf(x); }
OPMATH_FN double tanh(double x) { return ::tanh(x); }
OPMATH_FN float sigmoid(float x) { return 1.0f / (1.0f + ::expf(-x)); }
OPMATH_FN double sigmoid(double x) { return 1.0 / (1.0 + ::exp(-x)); }
OPMATH_FN float abs(float x) { return ::fabsf(x); }
OPMATH_FN double abs(double x) { return ::fabs(x); }
OPMATH_FN float sin(float x) { return ::sinf(x); }
OPMATH_FN double sin(double x) { return ::sin(x); }
OPMATH_FN float cos(float x) { return ::cosf(x); }
OPMATH_FN double cos(double x) { return ::cos(x); }
OPMATH_FN float erf(float x) { return ::erff(x); }
OPMATH_FN double erf(double x) { return ::erf(x); }
OPMATH_FN float pow(float x, float y) { return ::powf(x, y); }
OPMATH_FN double pow(double x, double y) { return ::pow(x, y); }

template <typename T>
OPMATH_FN T square(T x) { return x * x; }

// x ** n for a whole n (the expression's x ** 3.0 becomes ipow<3>(x)): multiplications by repeated
// squaring, as PyTorch and Inductor do. powf costs a log, an exp and their special cases: with it, a
// float16 tanh-GELU with x ** 3 ran at 0.42x of torch.compile on an H100 (docs/benchmarks.md in
// kernelgen, "Expression sweep"). Results may differ from pow's by a rounding or two.
template <int N, typename T>
OPMATH_FN T ipow(T x) {
  if constexpr (N < 0) {
    return T(1) / ipow<-N>(x);
  } else if constexpr (N == 0) {
    return T(1);
  } else if constexpr (N == 1) {
    return x;
  } else {
    const T half = ipow<N / 2>(x);
    if constexpr (N % 2 == 1) {
      return half * half * x;
    } else {
      return half * half;
    }
  }
}

// min and max propagate NaN like torch.minimum / torch.maximum (fminf/fmaxf would drop it).
template <typename T>
OPMATH_FN T min(T a, T b) { return (a != a || a < b) ? a : b; }
template <typename T>
OPMATH_FN T max(T a, T b) { return (a != a || a > b) ? a : b; }

}  // namespace opmath
}  // namespace 
