// v19: v18's stream-K schedule and v17's loop, each slice also asking the slice L2_PREFETCH further on
// into L2 (matmul_prefetch_vec.cuh's SliceLoader::prefetch_l2): the loop's register prefetch runs one
// slice ahead, enough to hide an L2 hit and not a DRAM access; the hint, a few instructions a slice,
// has the lines in L2 by then. WHOLE_ONLY=1 (the sweep) runs v17's schedule on the same grid.

#include "matmul.cuh"

#ifndef BM
#define BM 128  // rows of the CTA's tile
#endif
#ifndef BN
#define BN 256  // columns of the CTA's tile
#endif
#ifndef WM
#define WM 64
#endif
#ifndef WN
#define WN 64
#endif
#ifndef S
#define S 8
#endif
#ifndef L2_PREFETCH
#define L2_PREFETCH 2  // slices ahead
#endif

#include "matmul_stream_k.cuh"

#define CTAS_PER_SM (BM * BN <= 128 * 128 ? 2 : 1)

extern "C" __global__ void __launch_bounds__(THREADS, CTAS_PER_SM)
matmul_l2_prefetch(const elem_t* __restrict__ a, const elem_t* __restrict__ b, elem_t* __restrict__ c, int n,
                   float* __restrict__ partials, u32* __restrict__ flags)
{
    stream_k_tiles(a, b, c, n, partials, flags);
}
