// v28: v27's seven Strassen products with the ten operand sums formed first by strassen_sums, so that
// each product runs v17's loop on one-term operands (matmul_strassen_sums.cuh); C zeroed, then the
// products added into its quadrants. The headers define strassen_sums and matmul_strassen_whole (v17's
// kernel on the whole matrix, for sizes that do not split into whole tiles and slices).

#include "matmul.cuh"

#include "matmul_tiles_v17.cuh"
#ifndef S
#define S 8
#endif

#include "matmul_prefetch_vec.cuh"
#include "matmul_strassen_sums.cuh"

extern "C" __global__ void __launch_bounds__(THREADS, CTAS_PER_SM)
matmul_strassen_fed(const elem_t* __restrict__ a, const float* __restrict__ ta, const elem_t* __restrict__ b,
                    const float* __restrict__ tb, elem_t* __restrict__ c, int n)
{
    strassen_fed_tile(a, ta, b, tb, c, n);
}
