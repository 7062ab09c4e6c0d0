// v01 (the lecture's GPU matmul v1): one thread per element of C.
//
// Blocks of BLOCK x BLOCK threads tile C; the thread at (x, y) (x from threadIdx.x, as in the
// lecture's listing) reads row x of A and column y of B straight from global memory, N + N
// values, and writes C[x][y]: 2N^3 global reads in all. x is the row, so the 32 lanes of a warp
// read A down a column (32 different rows: one 32-byte sector per lane) and write C down a
// column too; they all read the same element of B. Threads outside the matrix (N not a
// multiple of BLOCK) return at once.

#include "matmul.cuh"

#ifndef BLOCK
#define BLOCK 32
#endif

extern "C" __global__ void __launch_bounds__(BLOCK * BLOCK)
matmul_one_per_output(const elem_t* __restrict__ a, const elem_t* __restrict__ b, elem_t* __restrict__ c, int n)
{
    const int x = blockIdx.x * blockDim.x + threadIdx.x;  // row of C
    const int y = blockIdx.y * blockDim.y + threadIdx.y;  // column of C
    if (x >= n || y >= n) return;
    float result = 0.0f;
    for (int k = 0; k < n; ++k) result = fmaf(elem_to_float(a[at(x, k, n)]), elem_to_float(b[at(k, y, n)]), result);
    c[at(x, y, n)] = float_to_elem(result);
}
