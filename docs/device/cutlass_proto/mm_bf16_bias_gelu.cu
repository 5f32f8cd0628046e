// One instantiation of the prototype (see mm_sm90.cu).
#define MM_ELEMENT cutlass::bfloat16_t
#define MM_BIAS true
#define MM_ENTRY mm_sm90_bf16_bias_gelu
#include "mm_sm90.cu"
