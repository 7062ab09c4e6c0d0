// v02's kernel, a group of four elements per thread with the look-back from a neighbour's
// registers (what and why: v02_vectorized.cu); v03 builds it with TRANSFORM_FAST_MATH.
// Append-only: once a recorded version builds it, it is never changed in place.
#pragma once

#include "transform.cuh"

extern "C" __global__ void __launch_bounds__(256)
transform_vec(const elem_t* __restrict__ x, elem_t* __restrict__ y, double* __restrict__ partials, u64 n)
{
    const u64 groups = (n >> 5) << 3;  // groups in whole 32-blocks
    const u64 stride = (u64)gridDim.x * blockDim.x;  // a multiple of 32 groups: lanes keep their place
    float acc = 0.0f;
    for (u64 base = (u64)blockIdx.x * blockDim.x; base < groups; base += stride) {
        const u64 g = base + threadIdx.x;  // the whole warp iterates together: the shuffles see every lane
        const bool live = g < groups;
        const group4 f = transform_group(live ? load4(x + 4 * g) : group4{1.f, 1.f, 1.f, 1.f}, g);
        if (live) {
            store4(y + 4 * g, f);
            if (f.b > 0.5f) acc += f.a;
        }
    }
    finish_block(x, y, partials, n, groups, acc);
}
