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
#include <type_traits>

#if defined(__CUDACC__)
#define OPMATH_FN __host__ __device__ __forceinline__
#else
#define OPMATH_FN inline
#endif
// sin and cos: OPMATH_FN, and in device code declared const (a function of its argument alone), so that
// the compiler computes a call repeated with the same argument once, as it does on its own for exp, log,
// tanh and the rest. It does not for sinf and cosf: their code for arguments beyond 105615 (the
// Payne-Hanek reduction) writes a local array, and a copy that writes memory is not merged with another.
// cos(u) * cos(u) then costs a second cosine at every element: on an H200 such a float16 row of three
// inputs runs at 0.66x of torch.compile (which computes the cosine once) without the declaration, and at
// 0.88x with it. (Host code keeps the plain declaration: there sinf may set errno.)
#if defined(__CUDA_ARCH__)
#define OPMATH_TRIG_FN OPMATH_FN __attribute__((const))
#else
#define OPMATH_TRIG_FN OPMATH_FN
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
OPMATH_TRIG_FN float sin(float x) { return ::sinf(x); }
OPMATH_TRIG_FN double sin(double x) { return ::sin(x); }
OPMATH_TRIG_FN float cos(float x) { return ::cosf(x); }
OPMATH_TRIG_FN double cos(double x) { return ::cos(x); }
OPMATH_FN float erf(float x) { return ::erff(x); }
OPMATH_FN double erf(double x) { return ::erf(x); }
OPMATH_FN float pow(float x, float y) { return ::powf(x, y); }
OPMATH_FN double pow(double x, double y) { return ::pow(x, y); }

template <typename T>
OPMATH_FN T square(T x) { return x * x; }

// ---- Exact arithmetic: add_rn, sub_rn, mul_rn (and ipow<N, true>) -------------------------------
// Each operation is rounded on its own and never contracted into a fused multiply-add. A value that is
// computed twice and compared for equality is written with them: the backward's mask [f == max(f)]
// computes f again after the reduction that found max(f), and the mask must see those very bits. With
// plain operators each copy may contract a * b + c into an FMA differently (the compiler decides by how
// the copy's products are used around it), and the mask could then miss every element of the row.
// On the GPU these are the round-to-nearest intrinsics (__fmul_rn and kin), as cheap as the plain
// instructions; on the CPU each is a call the compiler cannot fuse across (-ffp-contract=fast, the
// default of g++, fuses on hosts with FMA, such as aarch64).
namespace exact_host {
template <typename T>
__attribute__((noinline)) T add(T a, T b) { return a + b; }
template <typename T>
__attribute__((noinline)) T sub(T a, T b) { return a - b; }
template <typename T>
__attribute__((noinline)) T mul(T a, T b) { return a * b; }
}  // namespace exact_host
#if defined(__CUDA_ARCH__)
OPMATH_FN float add_rn(float a, float b) { return __fadd_rn(a, b); }
OPMATH_FN double add_rn(double a, double b) { return __dadd_rn(a, b); }
OPMATH_FN float sub_rn(float a, float b) { return __fsub_rn(a, b); }
OPMATH_FN double sub_rn(double a, double b) { return __dsub_rn(a, b); }
OPMATH_FN float mul_rn(float a, float b) { return __fmul_rn(a, b); }
OPMATH_FN double mul_rn(double a, double b) { return __dmul_rn(a, b); }
#else
template <typename T>
OPMATH_FN T add_rn(T a, T b) { return exact_host::add(a, b); }
template <typename T>
OPMATH_FN T sub_rn(T a, T b) { return exact_host::sub(a, b); }
template <typename T>
OPMATH_FN T mul_rn(T a, T b) { return exact_host::mul(a, b); }
#endif

// a * b, and with kExact mul_rn's exact product (above).
template <bool kExact, typename T>
OPMATH_FN T times(T a, T b) {
  if constexpr (kExact) {
    return mul_rn(a, b);
  } else {
    return a * b;
  }
}

// x ** n for a whole n (the expression's x ** 3.0 becomes ipow<3>(x)): multiplications by repeated
// squaring, as PyTorch and Inductor do. powf costs a log, an exp and their special cases: with it, a
// float16 tanh-GELU with x ** 3 runs at about 0.4x of torch.compile on an H100. Results may differ
// from pow's by a rounding or two. With kExact the products are exact (mul_rn), for a value that is
// computed twice and compared (ipow<3, true>(x)).
template <int N, bool kExact = false, typename T>
OPMATH_FN T ipow(T x) {
  if constexpr (N < 0) {
    return T(1) / ipow<-N, kExact>(x);
  } else if constexpr (N == 0) {
    return T(1);
  } else if constexpr (N == 1) {
    return x;
  } else {
    const T half = ipow<N / 2, kExact>(x);
    if constexpr (N % 2 == 1) {
      return times<kExact>(times<kExact>(half, half), x);
    } else {
      return times<kExact>(half, half);
    }
  }
}

// ---- fast_float: float16 and bfloat16 arithmetic in the CUDA kernels ------------------------------
// A float whose division, exp and sigmoid run on the GPU's fast approximate instructions (an approximate
// reciprocal, ex2.approx.f32), as torch.compile's Triton kernels do, and whose pow is an exp of a product
// with a log. Their errors are far below the rounding of a 16-bit result, half an ulp: 2^-11 relative in
// float16, 2^-8 in bfloat16.
//   * division: 2 ulp of float (2^-22 relative) over the whole range (fast_divide: __fdividef, with its
//     operands scaled where the divisor is beyond its range; bfloat16 has float's range and sees it);
//   * exp: 2 + 1.17|x| ulp (__expf), below 2^-16 relative wherever exp(x) is a finite float;
//   * pow(x, y) for a finite x > 0: __expf(y * logf(x)), 4 + 2|log2 pow(x, y)| ulp (exp's error and the
//     exponent's rounding grow with it), at most about 2^-15 relative wherever the result is a normal float;
//     powf's own code (a log and an exp in extra precision) runs for any other x. So pow and log of one
//     value share one logf (the compiler computes it once), and a derivative's pow(x, y - 1) next to
//     pow(x, y) and log(x) costs a multiply and an exp.
// log, sin, cos, tanh, erf and sqrt stay accurate: __logf's error is absolute near 1, so log(1 + small)
// would lose float16 digits, and __sinf / __cosf grow inaccurate with |x|.
// With the accurate functions, a float16 expression with three exps and two sigmoids runs at about
// 0.8x of torch.compile on an H100.
// float32 and float64 kernels, and every CPU loop, compute in float / double with accurate math.
// Arithmetic on fast_float gives fast_float, so the policy follows the whole expression; it converts
// to and from float implicitly, so any float function accepts it (at that function's accuracy).
struct fast_float {
  float v;
  fast_float() = default;
  OPMATH_FN constexpr fast_float(float x) : v(x) {}
  OPMATH_FN constexpr operator float() const { return v; }
};

// The type a CUDA kernel evaluates an expression in, for storage type S (whose op-math type is A): the
// elementwise kernels, the rowwise kernels (whose reductions still sum in A) and the matmul epilogues.
template <typename S, typename A>
using kernel_math_type = std::conditional_t<std::is_same<A, float>::value && !std::is_same<S, float>::value, fast_float, A>;

// a / b to 2 ulp over float's whole range, on the approximate reciprocal. __fdividef(a, b) is a * (1 / b),
// 2 ulp for |b| in [2^-126, 2^126] (0 beyond 2^126, inf below 2^-128); outside that range both operands are
// first scaled by one power of two, which is exact and keeps 0, inf and NaN as they are. It is intrinsics,
// not inline PTX (div.full.f32, of the same accuracy), because the compiler sees through intrinsics: a
// division whose operands are the same at every element of a row is computed once per row (loop-invariant
// code motion), and one computed twice is computed once (common subexpressions). An asm statement is
// opaque to both.
OPMATH_FN float fast_divide(float a, float b) {
#if defined(__CUDA_ARCH__)
  const float size = fabsf(b);
  const float scale = size > 0x1p126f ? 0x1p-2f : (size < 0x1p-126f ? 0x1p24f : 1.0f);
  return __fdividef(a * scale, b * scale);
#else
  return a / b;
#endif
}

// + - * / of two fast_floats, or of a fast_float and a number (taken as float): exact matches, so
// they win over the built-in float operators that the implicit conversion would also allow.
template <typename T>
using if_number = std::enable_if_t<std::is_arithmetic<T>::value, int>;
OPMATH_FN fast_float operator+(fast_float a, fast_float b) { return a.v + b.v; }
OPMATH_FN fast_float operator-(fast_float a, fast_float b) { return a.v - b.v; }
OPMATH_FN fast_float operator*(fast_float a, fast_float b) { return a.v * b.v; }
OPMATH_FN fast_float operator/(fast_float a, fast_float b) { return fast_divide(a.v, b.v); }
OPMATH_FN fast_float operator-(fast_float a) { return -a.v; }
template <typename T, if_number<T> = 0>
OPMATH_FN fast_float operator+(fast_float a, T b) { return a + fast_float(static_cast<float>(b)); }
template <typename T, if_number<T> = 0>
OPMATH_FN fast_float operator+(T a, fast_float b) { return fast_float(static_cast<float>(a)) + b; }
template <typename T, if_number<T> = 0>
OPMATH_FN fast_float operator-(fast_float a, T b) { return a - fast_float(static_cast<float>(b)); }
template <typename T, if_number<T> = 0>
OPMATH_FN fast_float operator-(T a, fast_float b) { return fast_float(static_cast<float>(a)) - b; }
template <typename T, if_number<T> = 0>
OPMATH_FN fast_float operator*(fast_float a, T b) { return a * fast_float(static_cast<float>(b)); }
template <typename T, if_number<T> = 0>
OPMATH_FN fast_float operator*(T a, fast_float b) { return fast_float(static_cast<float>(a)) * b; }
template <typename T, if_number<T> = 0>
OPMATH_FN fast_float operator/(fast_float a, T b) { return a / fast_float(static_cast<float>(b)); }
template <typename T, if_number<T> = 0>
OPMATH_FN fast_float operator/(T a, fast_float b) { return fast_float(static_cast<float>(a)) / b; }
OPMATH_FN fast_float& operator+=(fast_float& a, fast_float b) { return a = a + b; }
OPMATH_FN fast_float& operator-=(fast_float& a, fast_float b) { return a = a - b; }
OPMATH_FN fast_float& operator*=(fast_float& a, fast_float b) { return a = a * b; }
OPMATH_FN fast_float& operator/=(fast_float& a, fast_float b) { return a = a / b; }

#if defined(__CUDA_ARCH__)
OPMATH_FN fast_float exp(fast_float x) { return ::__expf(x.v); }
#else
OPMATH_FN fast_float exp(fast_float x) { return ::expf(x.v); }
#endif
OPMATH_FN fast_float sigmoid(fast_float x) { return fast_float(1.0f) / (fast_float(1.0f) + exp(-x)); }
OPMATH_FN fast_float log(fast_float x) { return ::logf(x.v); }
#if defined(__CUDA_ARCH__)
// powf for the x that fast_pow leaves to it, called rather than inlined: its code, several times the fast
// path's, stays out of every element's loop (the instruction cache holds the kernel).
__device__ __noinline__ float pow_other(float x, float y) { return ::powf(x, y); }
OPMATH_FN float fast_pow(float x, float y) {
  if (x > 0.0f && x <= 0x1.fffffep127f) {
    const float l = ::logf(x);
    return l == 0.0f ? 1.0f : ::__expf(y * l);  // pow(1, y) is 1 for every y, inf and NaN included
  }
  return pow_other(x, y);
}
#else
OPMATH_FN float fast_pow(float x, float y) { return ::powf(x, y); }
#endif
OPMATH_FN fast_float sqrt(fast_float x) { return sqrt(x.v); }
OPMATH_FN fast_float rsqrt(fast_float x) { return rsqrt(x.v); }
OPMATH_FN fast_float tanh(fast_float x) { return ::tanhf(x.v); }
OPMATH_FN fast_float abs(fast_float x) { return ::fabsf(x.v); }
OPMATH_FN fast_float sin(fast_float x) { return sin(x.v); }
OPMATH_FN fast_float cos(fast_float x) { return cos(x.v); }
OPMATH_FN fast_float erf(fast_float x) { return ::erff(x.v); }
OPMATH_FN fast_float pow(fast_float x, fast_float y) { return fast_pow(x.v, y.v); }
OPMATH_FN fast_float pow(fast_float x, float y) { return fast_pow(x.v, y); }
OPMATH_FN fast_float pow(float x, fast_float y) { return fast_pow(x, y.v); }

// min and max propagate NaN like torch.minimum / torch.maximum (fminf/fmaxf would drop it).
template <typename T>
OPMATH_FN T min(T a, T b) { return (a != a || a < b) ? a : b; }
template <typename T>
OPMATH_FN T max(T a, T b) { return (a != a || a > b) ? a : b; }
// The same for float (and fast_float) on sm_80 and later in one instruction, min.NaN.f32 / max.NaN.f32
// (NaN if either operand is NaN, otherwise the smaller or larger operand, bit for bit), where the compare
// and select above take three. A row's maximum or minimum takes one per element, and a float16 or
// bfloat16 kernel is bound by the instructions it issues once it needs more than about 30 an element
// (what an H200's SMs issue while its memory moves a 2-byte element in and out): the float16 rows of
// x * tanh(max(x * x)) * tanh(min(x * x)) - min(x) take 26 instructions an element with them, 38 without,
// and run at 91-97% of a copy's bandwidth on an H200 instead of 59-70%.
OPMATH_FN float min(float a, float b) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  float r;
  asm("min.NaN.f32 %0, %1, %2;" : "=f"(r) : "f"(a), "f"(b));
  return r;
#else
  return min<float>(a, b);
#endif
}
OPMATH_FN float max(float a, float b) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  float r;
  asm("max.NaN.f32 %0, %1, %2;" : "=f"(r) : "f"(a), "f"(b));
  return r;
#else
  return max<float>(a, b);
#endif
}
OPMATH_FN fast_float min(fast_float a, fast_float b) { return min(a.v, b.v); }
OPMATH_FN fast_float max(fast_float a, fast_float b) { return max(a.v, b.v); }

}  // namespace opmath
}  // namespace 
