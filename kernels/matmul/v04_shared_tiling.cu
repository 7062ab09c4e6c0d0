// v04 (the lecture's v3, SRAM tiling): a block computes an L x L tile of C from S-deep slices of
// A and B that its threads fetch into shared memory together.
//
// A block of (L/V) x (L/V) threads owns C[r0 .. r0+L) x [c0 .. c0+L); thread (tx, ty) owns the
// V x V block at rows r0 + ty*V.., columns c0 + tx*V.. (the lecture's listing: rows from
// threadIdx.y). For each slice of S columns of A / rows of B, every thread fetches its share of
// the two S x L slices (cooperative fetching: element e of the slice, e = tid, tid + threads, ..)
// into sA (A's slice transposed, sA[k][m], as the lecture stores it) and sB, then, after the
// barrier, adds S outer products of V values of sA and V of sB, both read from shared memory.
// The barrier at the top of the loop keeps a fast thread from refetching a slice others still
// read. Global reads: 2N^3/L; shared reads: 2N^3/V. The fetch walks the slices in sA's order, so
// a warp reads A down a column (32 rows, 32 sectors) while it reads B along a row.

#include "matmul.cuh"
#include "matmul_tiles.cuh"

extern "C" __global__ void __launch_bounds__(THREADS)
matmul_shared_tiling(const elem_t* __restrict__ a, const elem_t* __restrict__ b, elem_t* __restrict__ c, int n)
{
    __shared__ float sA[S][L];  // sA[k][m] = A[r0 + m][k0 + k]
    __shared__ float sB[S][L];  // sB[k][m] = B[k0 + k][c0 + m]
    const int tid = threadIdx.y * TPD + threadIdx.x;
    const int r0 = blockIdx.y * L, c0 = blockIdx.x * L;
    float acc[V][V] = {};
    float av[V], bv[V];
    for (int k0 = 0; k0 < n; k0 += S) {
        __syncthreads();
#pragma unroll
        for (int e = tid; e < S * L; e += THREADS) {
            const int k = e / L, m = e % L;
            sA[k][m] = load_or_zero(a, r0 + m, k0 + k, n);
            sB[k][m] = load_or_zero(b, k0 + k, c0 + m, n);
        }
        __syncthreads();
#pragma unroll
        for (int ki = 0; ki < S; ++ki) {
#pragma unroll
            for (int i = 0; i < V; ++i) av[i] = sA[ki][threadIdx.y * V + i];
#pragma unroll
            for (int j = 0; j < V; ++j) bv[j] = sB[ki][threadIdx.x * V + j];
            outer_product(acc, av, bv);
        }
    }
    store_block(c, acc, r0 + threadIdx.y * V, c0 + threadIdx.x * V, n);
}
