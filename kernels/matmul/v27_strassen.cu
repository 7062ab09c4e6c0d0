// v27: one level of Strassen's algorithm on v17's loop (matmul_strassen.cuh): seven products of
// h x h quadrant sums (h = n / 2) instead of eight, so 7/8 of v17's FMAs; the operand sums are formed
// as each slice is loaded, the products added into C's quadrants by vector reductions at the end.
// The grid is (h / BN, h / BM, 7), a product a z. For n that does not split into whole tiles and
// slices the host launches matmul_strassen_whole instead: v17's kernel on the whole matrix, defined in
// matmul_strassen.cuh for v27-v29.

#include "matmul.cuh"

#include "matmul_tiles_v17.cuh"
#ifndef S
#define S 8
#endif

#include "matmul_prefetch_vec.cuh"
#include "matmul_strassen.cuh"

extern "C" __global__ void __launch_bounds__(THREADS, CTAS_PER_SM)
matmul_strassen(const elem_t* __restrict__ a, const elem_t* __restrict__ b, elem_t* __restrict__ c, int n)
{
    strassen_tile(a, b, c, n);
}
