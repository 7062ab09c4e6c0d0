// v18: v17's tiles and loop, scheduled by stream-K in its hybrid form (matmul_stream_k.cuh): a
// persistent grid of one CTA an SM (two on 128 x 128 tiles) computes whole tiles a wave at a time,
// then shares the k slices of the last one to two waves' tiles evenly; a tile cut between CTAs is
// finished by the CTA holding its first slice, which adds the others' partial sums from a workspace
// in a fixed order. 4096 on 256 x 128 tiles is 512 tiles, 3.88 waves of 132 SMs: the last wave a
// tile-granular grid runs 12 % empty, this grid not at all.

#include "matmul.cuh"

#ifndef BM
#define BM 256  // rows of the CTA's tile
#endif
#ifndef BN
#define BN 128  // columns of the CTA's tile
#endif
#ifndef WM
#define WM 128
#endif
#ifndef WN
#define WN 32
#endif
#ifndef S
#define S 8
#endif

#include "matmul_stream_k.cuh"

#define CTAS_PER_SM (BM * BN <= 128 * 128 ? 2 : 1)

extern "C" __global__ void __launch_bounds__(THREADS, CTAS_PER_SM)
matmul_stream_k(const elem_t* __restrict__ a, const elem_t* __restrict__ b, elem_t* __restrict__ c, int n,
                float* __restrict__ partials, u32* __restrict__ flags)
{
    stream_k_tiles(a, b, c, n, partials, flags);
}
