// One instantiation of the prototype (see mm_sm90.cu).
#define MM_ELEMENT cutlass::half_t
#define MM_BIAS false
#define MM_ENTRY mm_sm90_f16
#include "mm_sm90.cu"
