// v04: v03 with UNROLL groups in flight per thread: all of a thread's loads of one iteration are
// issued before the first group is computed.
//
// v02 and v03 keep one 16-byte load in flight per thread (the load, then the four functions and
// the store that need it). Here an iteration covers UNROLL·blockDim groups per block: the thread
// loads its UNROLL groups (blockDim apart, so each warp still holds 32 consecutive groups for the
// look-back shuffle), then transforms and stores them one after another. UNROLL and the blocks
// per SM come from the recorded sweep (v04_unrolled.py). Fast intrinsics as in v03.

#define TRANSFORM_FAST_MATH 1
#include "transform.cuh"

#ifndef UNROLL
#define UNROLL 4
#endif

extern "C" __global__ void __launch_bounds__(256)
transform_unrolled(const elem_t* __restrict__ x, elem_t* __restrict__ y, double* __restrict__ partials, u64 n)
{
    const u64 groups = (n >> 5) << 3;
    const u64 chunk = (u64)blockDim.x * UNROLL;  // groups per block per iteration
    const u64 stride = (u64)gridDim.x * chunk;
    float acc = 0.0f;
    for (u64 base = (u64)blockIdx.x * chunk; base < groups; base += stride) {
        group4 v[UNROLL];
#pragma unroll
        for (int u = 0; u < UNROLL; ++u) {
            const u64 g = base + (u64)u * blockDim.x + threadIdx.x;
            v[u] = g < groups ? load4(x + 4 * g) : group4{1.f, 1.f, 1.f, 1.f};
        }
#pragma unroll
        for (int u = 0; u < UNROLL; ++u) {
            const u64 g = base + (u64)u * blockDim.x + threadIdx.x;
            const group4 f = transform_group(v[u], g);
            if (g < groups) {
                store4(y + 4 * g, f);
                if (f.b > 0.5f) acc += f.a;
            }
        }
    }
    finish_block(x, y, partials, n, groups, acc);
}
