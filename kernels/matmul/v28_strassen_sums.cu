// v28: v27's seven Strassen products with the ten operand sums formed first by strassen_sums, so that
// each product runs v17's loop on one-term operands (matmul_strassen_sums.cuh); C zeroed, then the
// products added into its quadrants. matmul_strassen_whole is v17's kernel on the whole matrix, for
// sizes that do not split into whole tiles and slices.

#include "matmul.cuh"

#include "matmul_tiles_v17.cuh"
#ifndef S
#define S 8
#endif

#include "matmul_prefetch_vec.cuh"
#include "matmul_strassen_sums.cuh"

#define CTAS_PER_SM (BM * BN <= 128 * 128 ? 2 : 1)

extern "C" __global__ void __launch_bounds__(256)
strassen_sums(const elem_t* __restrict__ a, const elem_t* __restrict__ b, float* __restrict__ ta, float* __restrict__ tb,
              int n)
{
    strassen_sums_of(a, b, ta, tb, n);
}

extern "C" __global__ void __launch_bounds__(THREADS, CTAS_PER_SM)
matmul_strassen_fed(const elem_t* __restrict__ a, const float* __restrict__ ta, const elem_t* __restrict__ b,
                    const float* __restrict__ tb, elem_t* __restrict__ c, int n)
{
    strassen_fed_tile(a, ta, b, tb, c, n);
}

extern "C" __global__ void __launch_bounds__(THREADS, CTAS_PER_SM)
matmul_strassen_whole(const elem_t* __restrict__ a, const elem_t* __restrict__ b, elem_t* __restrict__ c, int n)
{
    vec_tile(a, b, c, n);
}
