#pragma once
// Entry points of the issue-11 prototype (mm_sm90.cu, compiled once per dtype and epilogue). Each
// returns 0 on success, 1 if CUTLASS cannot implement the problem (alignment), 2 if the workspace is
// too small, 3/4 if initialization or the launch failed, 9 for an unknown configuration.
#include <cuda_runtime_api.h>

#include <cstddef>

#define MM_DECLARE(name)                                                                                   \
  int name(int config, const void* a, const void* b, const void* bias, void* d, int m, int n, int k,      \
           void* workspace, size_t workspace_bytes, cudaStream_t stream);
MM_DECLARE(mm_sm90_f16)
MM_DECLARE(mm_sm90_f16_bias_gelu)
MM_DECLARE(mm_sm90_bf16)
MM_DECLARE(mm_sm90_bf16_bias_gelu)
