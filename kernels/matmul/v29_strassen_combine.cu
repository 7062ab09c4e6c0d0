// v29: v28's sums and products, each product stored into a block of its own, then C written once by
// strassen_combine (matmul_strassen_combine.cuh): no reductions, no zeroed C, the same bits every call.
// The headers define v28's strassen_sums and matmul_strassen_whole (v17's kernel on the whole matrix, for
// sizes that do not split into whole tiles and slices).

#include "matmul.cuh"

#include "matmul_tiles_v17.cuh"
#ifndef S
#define S 8
#endif

#include "matmul_prefetch_vec.cuh"
#include "matmul_strassen_combine.cuh"

extern "C" __global__ void __launch_bounds__(THREADS, CTAS_PER_SM)
matmul_strassen_stored(const elem_t* __restrict__ a, const float* __restrict__ ta, const elem_t* __restrict__ b,
                       const float* __restrict__ tb, float* __restrict__ m, int n)
{
    strassen_stored_tile(a, ta, b, tb, m, n);
}

extern "C" __global__ void __launch_bounds__(256)
strassen_combine(const float* __restrict__ m, elem_t* __restrict__ c, int n)
{
    strassen_combine_of(m, c, n);
}
