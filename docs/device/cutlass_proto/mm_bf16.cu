// One instantiation of the prototype (see mm_sm90.cu).
#define MM_ELEMENT cutlass::bfloat16_t
#define MM_BIAS false
#define MM_ENTRY mm_sm90_bf16
#include "mm_sm90.cu"
