// v22: v17's kernel with the FMAs of each step issued in another order (FMA_ORDER, matmul.cuh's
// outer_product_ordered): a profile of v17 has its warps stalled at dispatch about twice as often
// per issued instruction as cuBLAS's kernel, which with the same operands points at register
// bank conflicts among the three sources of an FMA; the order decides which operand consecutive
// FMAs share and so what the operand reuse caches absorb.

#include "matmul.cuh"

#include "matmul_rect_tiles.cuh"

#ifndef FMA_ORDER
#define FMA_ORDER 1
#endif

#include "matmul_prefetch_vec.cuh"

extern "C" __global__ void __launch_bounds__(THREADS, 1)
matmul_fma_order(const elem_t* __restrict__ a, const elem_t* __restrict__ b, elem_t* __restrict__ c, int n)
{
    vec_tile(a, b, c, n);
}
