// v03 (the lecture's v2, register tiling): each thread's V x V block of C as a sum of outer
// products.
//
// Same grid and thread-to-block mapping as v02 (thread (x, y) owns rows x*V.. and columns y*V..,
// x from threadIdx.x). For each k the thread loads V values of column k of A (its rows) and V
// values of row k of B (its columns) into registers, then adds their V x V outer product to its
// sums: every value it loads is used V times. 2NV reads a thread, 2N^3/V in all, against v02's
// N^3/V + N^3. Loads outside the matrix read 0, stores outside it are skipped.

#include "matmul.cuh"
#include "matmul_grid.cuh"

extern "C" __global__ void __launch_bounds__(BLOCK * BLOCK)
matmul_register_tiling(const elem_t* __restrict__ a, const elem_t* __restrict__ b, elem_t* __restrict__ c, int n)
{
    const int row0 = (blockIdx.x * blockDim.x + threadIdx.x) * V;
    const int col0 = (blockIdx.y * blockDim.y + threadIdx.y) * V;
    float acc[V][V] = {};
    float av[V], bv[V];
    for (int k = 0; k < n; ++k) {
#pragma unroll
        for (int i = 0; i < V; ++i) av[i] = load_or_zero(a, row0 + i, k, n);
#pragma unroll
        for (int j = 0; j < V; ++j) bv[j] = load_or_zero(b, k, col0 + j, n);
        outer_product(acc, av, bv);
    }
    store_block(c, acc, row0, col0, n);
}
