// v02 (the lecture's v1.5, thread tiling): each thread computes a V x V block of C.
//
// Blocks of BLOCK x BLOCK threads; the thread at (x, y) owns rows x*V .. x*V+V-1 and columns
// y*V .. y*V+V-1 (x the row, from threadIdx.x, as in v01). For each of its V rows it keeps a piece
// of the row of A in registers (KC values at a time: the lecture's a[N], which no thread can
// hold) and walks its V columns of B against it, so A is read once per row and B once per
// (row, column): NV + NV^2 reads a thread, N^3/V + N^3 in all. The V x V sums live in registers.
// Every load outside the matrix reads 0 and every store outside it is skipped, so any N works.

#include "matmul.cuh"
#include "matmul_grid.cuh"

#ifndef KC
#define KC 8  // elements of a row of A held in registers at a time
#endif

extern "C" __global__ void __launch_bounds__(BLOCK * BLOCK)
matmul_thread_tiling(const elem_t* __restrict__ a, const elem_t* __restrict__ b, elem_t* __restrict__ c, int n)
{
    const int row0 = (blockIdx.x * blockDim.x + threadIdx.x) * V;
    const int col0 = (blockIdx.y * blockDim.y + threadIdx.y) * V;
    float acc[V][V] = {};
#pragma unroll
    for (int x = 0; x < V; ++x) {
        for (int kc = 0; kc < n; kc += KC) {
            float arow[KC];  // a piece of row row0 + x of A
#pragma unroll
            for (int k = 0; k < KC; ++k) arow[k] = load_or_zero(a, row0 + x, kc + k, n);
#pragma unroll
            for (int y = 0; y < V; ++y)
#pragma unroll
                for (int k = 0; k < KC; ++k) acc[x][y] = fmaf(arow[k], load_or_zero(b, kc + k, col0 + y, n), acc[x][y]);
        }
    }
    store_block(c, acc, row0, col0, n);
}
