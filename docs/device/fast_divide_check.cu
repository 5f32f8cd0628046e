// opmath::fast_divide (the generated packages' csrc/opmath.h, template version 25) against the exact quotient,
// over float's whole range: divisors of every exponent from the smallest subnormal to the largest normal, and
// numerators across the range, then 0, inf and NaN. Prints the largest error in ulps of the exact quotient
// (normal results) and in units of the smallest normal (subnormal results), beside inline div.full.f32's,
// and the special cases that differ from IEEE division. Build and run (docs/device/stop52.sh ab1 does):
//   nvcc -std=c++17 -arch=sm_90 -I<torch include> -o /tmp/fdc docs/device/fast_divide_check.cu && /tmp/fdc
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "../../examples/muladd/muladd/csrc/opmath.h"

__global__ void divide(const float* a, const float* b, float* fast, float* full, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    fast[i] = opmath::fast_divide(a[i], b[i]);
    float q;
    asm("div.full.f32 %0, %1, %2;" : "=f"(q) : "f"(a[i]), "f"(b[i]));
    full[i] = q;
  }
}

// The error of got against the exact quotient: ulps of a normal result, units of 2^-126 for a subnormal one.
static double error_of(float got, double exact, bool* subnormal) {
  const double size = std::fabs(exact);
  *subnormal = size < 0x1p-126;
  if (*subnormal) {
    return std::fabs(static_cast<double>(got) - exact) / 0x1p-126;
  }
  const double ulp = std::ldexp(1.0, std::ilogb(size) - 23);
  return std::fabs(static_cast<double>(got) - exact) / ulp;
}

int main() {
  std::vector<float> a, b;
  srand(7);
  for (int eb = -149; eb <= 127; ++eb) {
    for (int k = 0; k < 64; ++k) {
      const float mb = 1.0f + static_cast<float>(rand()) / RAND_MAX;
      const float den = std::ldexp(eb < -126 ? 1.0f : mb, eb);
      for (int ea : {-149, -140, -126, -100, -60, -20, -1, 0, 1, 20, 60, 100, 126, 127}) {
        const float ma = 1.0f + static_cast<float>(rand()) / RAND_MAX;
        a.push_back((k % 2 ? -1.0f : 1.0f) * std::ldexp(ea < -126 ? 1.0f : ma, ea));
        b.push_back(den);
      }
    }
  }
  const float specials[] = {0.0f, -0.0f, INFINITY, -INFINITY, NAN, 1.0f, -3.0f, 0x1p127f, 0x1p-149f};
  for (float x : specials) {
    for (float y : specials) {
      a.push_back(x);
      b.push_back(y);
    }
  }
  const int n = static_cast<int>(a.size());
  float *da, *db, *dfast, *dfull;
  cudaMalloc(&da, n * sizeof(float));
  cudaMalloc(&db, n * sizeof(float));
  cudaMalloc(&dfast, n * sizeof(float));
  cudaMalloc(&dfull, n * sizeof(float));
  cudaMemcpy(da, a.data(), n * sizeof(float), cudaMemcpyHostToDevice);
  cudaMemcpy(db, b.data(), n * sizeof(float), cudaMemcpyHostToDevice);
  divide<<<(n + 255) / 256, 256>>>(da, db, dfast, dfull, n);
  std::vector<float> fast(n), full(n);
  cudaMemcpy(fast.data(), dfast, n * sizeof(float), cudaMemcpyDeviceToHost);
  cudaMemcpy(full.data(), dfull, n * sizeof(float), cudaMemcpyDeviceToHost);
  if (cudaGetLastError() != cudaSuccess) {
    std::printf("CUDA error\n");
    return 2;
  }
  double worst[2][2] = {{0, 0}, {0, 0}};  // [fast, full][normal, subnormal]
  int mismatched_specials[2] = {0, 0}, compared = 0;
  for (int i = 0; i < n; ++i) {
    const double exact = static_cast<double>(a[i]) / static_cast<double>(b[i]);
    const float rounded = static_cast<float>(exact);
    const float got[2] = {fast[i], full[i]};
    for (int j = 0; j < 2; ++j) {
      if (!std::isfinite(rounded) || !std::isfinite(exact)) {
        // inf or NaN exactly: the same class and sign (an overflowing quotient is inf)
        const bool same = std::isnan(rounded) ? std::isnan(got[j]) : (got[j] == rounded);
        if (!same) {
          if (mismatched_specials[j]++ < 6) {
            std::printf("%s: %g / %g = %g, IEEE %g\n", j ? "div.full" : "fast_divide", a[i], b[i], got[j], rounded);
          }
        }
        continue;
      }
      bool subnormal = false;
      const double err = std::isfinite(got[j]) ? error_of(got[j], exact, &subnormal) : INFINITY;
      if (err > worst[j][subnormal]) {
        worst[j][subnormal] = err;
        if (err > 2.0) {
          std::printf("%s: %a / %a = %a, exact %a (%.2f %s)\n", j ? "div.full" : "fast_divide", a[i], b[i], got[j], exact,
                      err, subnormal ? "x 2^-126" : "ulp");
        }
      }
    }
    ++compared;
  }
  std::printf("%d quotients: fast_divide max %.3f ulp (normal results), %.3g x 2^-126 (subnormal), %d special "
              "cases unlike IEEE; div.full.f32 max %.3f ulp, %.3g x 2^-126, %d unlike IEEE\n",
              compared, worst[0][0], worst[0][1], mismatched_specials[0], worst[1][0], worst[1][1], mismatched_specials[1]);
  return worst[0][0] <= 2.0 && worst[0][1] <= 1.0 && mismatched_specials[0] == 0 ? 0 : 1;
}
