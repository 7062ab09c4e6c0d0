// v16: back to fp32 on the CUDA cores, v09's pipeline (matmul_prefetch.cuh) on larger tiles: a 128 x 256 tile of C per CTA of
// 256 threads, each lane 8 x 16 outputs (a warp's region 64 x 64), one CTA per SM.
//
// The lecture's two ratios both improve. Shared memory: a lane reads 8 values of A and 16 of B per
// step, two and four float4 loads, for 128 FMAs: 21 FMAs a shared load instead of v09's 16, and
// 2N³/V becomes N³/8 + N³/16 shared reads. Global memory: a CTA reads N·(128 + 256) elements for
// 32768 outputs, N³/128 + N³/256 reads in all instead of 2N³/128, a quarter fewer through L2.
// The price is registers: 128 sums and two sets of 24 values need about 200 of them, so one CTA of
// 8 warps per SM (__launch_bounds__(THREADS, 1)), half of v09's warps to hide the barrier behind;
// the values of step k + 1 read during step k's FMAs, and the 128 FMAs of a step, are what is left
// to hide the shared loads' latency with. BM x BN may be 256 x 128 (the same reads) or 128 x 128
// (4 warps, two CTAs per SM by their registers).

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

#include "matmul_prefetch.cuh"

extern "C" __global__ void __launch_bounds__(THREADS, 1)
matmul_large_tiles(const elem_t* __restrict__ a, const elem_t* __restrict__ b, elem_t* __restrict__ c, int n)
{
    prefetched_tile(a, b, c, n);
}
