// v17: v16's tiles with a main loop of FMAs and shared loads (matmul_prefetch_vec.cuh): compiled once
// for n % 4 == 0 and once for the scalar path, no guard or predicate in it (rows and columns past the
// matrix clamped, the partial k slice first and guarded, the last slice peeled), a few global pointers
// advanced by a constant a slice, immediate shared offsets, sA swizzled instead of padded.
//
// Tiles as v16's sweep found them: 256 x 128 with warps of 128 x 32 (16 x 8 a lane), 128 x 256 with
// 64 x 64 (8 x 16), one CTA per SM; 128 x 128 (v09's 8 x 8 lanes, or 8 x 16 on 4 warps) two per SM.

#include "matmul.cuh"

#include "matmul_tiles_v17.cuh"
#ifndef S
#define S 16
#endif

#include "matmul_prefetch_vec.cuh"

#define CTAS_PER_SM (BM * BN <= 128 * 128 ? 2 : 1)

extern "C" __global__ void __launch_bounds__(THREADS, CTAS_PER_SM)
matmul_unguarded_loop(const elem_t* __restrict__ a, const elem_t* __restrict__ b, elem_t* __restrict__ c, int n)
{
    vec_tile(a, b, c, n);
}
