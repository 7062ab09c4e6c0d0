// v04's kernel, UNROLL groups in flight per thread (what and why: v04_unrolled.cu); v05 builds
// it with TRANSFORM_STREAMING. Append-only: once a recorded version builds it, it is never
// changed in place.
#pragma once

#define TRANSFORM_FAST_MATH 1
#include "transform.cuh"

#ifndef UNROLL
#define UNROLL 4
#endif

extern "C" __global__ void __launch_bounds__(256)
transform_unrolled(const elem_t* __restrict__ x, elem_t* __restrict__ y, double* __restrict__ partials, u64 n)
{
    const u64 groups = (n >> 5) << 3;
    finish_block(x, y, partials, n, groups, grid_loop<UNROLL>(x, y, groups));
}
