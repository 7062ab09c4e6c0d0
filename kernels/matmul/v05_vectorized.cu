// v05: v04 with contiguous, 16-byte global reads: each thread fetches four consecutive elements of
// a row at a time, and a warp's fetch covers whole 32-byte sectors of A as well as of B.
//
// v04's fetch follows sA's transposed order, so a warp reads 32 rows of A at one column: 32
// sectors for 128 bytes. Here the slice of A (L rows x S columns) is fetched as L*S/4 quads taken
// along the rows (quad q: row q / (S/4), columns 4*(q % (S/4)) ..): the lanes read A's rows in
// order, one float4 (fp16: 8 bytes) each, and write its four values into the transposed sA. B's
// slice is fetched as quads along its rows into sB with one 16-byte shared store each. The inner
// loop reads its V values of sA and of sB as float4 too (V/4 shared loads each instead of V).
// Where n % 4 != 0 a row's quads are not aligned, and each quad falls back to four guarded
// scalar reads (load4_or_zero). Tiles, barriers and the thread-to-output mapping are v04's.

#include "matmul.cuh"
#include "matmul_tiles.cuh"
#include "matmul_vectorized.cuh"

extern "C" __global__ void __launch_bounds__(THREADS)
matmul_vectorized(const elem_t* __restrict__ a, const elem_t* __restrict__ b, elem_t* __restrict__ c, int n)
{
    __shared__ __align__(16) float sA[S][L];  // transposed, as v04's
    __shared__ __align__(16) float sB[S][L];
    const int tid = threadIdx.y * TPD + threadIdx.x;
    const int row0 = blockIdx.y * L, col0 = blockIdx.x * L;
    const bool vec = (n & 3) == 0;
    float acc[V][V] = {};
    for (int k0 = 0; k0 < n; k0 += S) {
        __syncthreads();
        fetch_slices_vectorized<L>(sA, sB, a, b, row0, col0, k0, n, vec, tid);
        __syncthreads();
#pragma unroll
        for (int ki = 0; ki < S; ++ki) {
            float av[V], bv[V];
#pragma unroll
            for (int i = 0; i < V; i += 4) put4(av, i, ld_float4(&sA[ki][threadIdx.y * V + i]));
#pragma unroll
            for (int j = 0; j < V; j += 4) put4(bv, j, ld_float4(&sB[ki][threadIdx.x * V + j]));
            outer_product(acc, av, bv);
        }
    }
    store_block(c, acc, row0 + threadIdx.y * V, col0 + threadIdx.x * V, n);
}
