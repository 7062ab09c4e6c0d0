// v03: v02 with the SFU intrinsics (__sinf, __cosf, __logf, __expf) in place of libdevice's
// sinf, cosf, logf, expf (TRANSFORM_FAST_MATH in transform.cuh). Everything else is v02's kernel
// (transform_vectorized.cuh).

#define TRANSFORM_FAST_MATH 1
#include "transform_vectorized.cuh"
