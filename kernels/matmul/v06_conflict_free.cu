// v06: v05 with shared-memory accesses free of bank conflicts: a padded sA, and each thread's
// V x V outputs spread as (V/4) x (V/4) chunks of 4 x 4 so that a warp's float4 reads of sB are
// contiguous.
//
// Shared memory serves 32 banks of 4 bytes; a warp's accesses to different addresses in one bank
// are served one after another. Two places of v05 collide:
// * the inner loop: thread tx reads sB[k][tx*V ..]: with V = 8 the 16 threads of a half-warp read
//   float4s 32 bytes apart, two per bank group, two wavefronts per quarter-warp instead of one.
//   Here a thread owns columns cj*(L/(V/4)) + tx*4 .. +3 (cj = 0 .. V/4-1), and rows likewise:
//   consecutive threads read consecutive float4s, and C is written the same way, one float4 per
//   chunk row (store_chunks);
// * the transposed store of A's quads: sA[k + j][m] with a row pitch of L floats (a multiple of 32)
//   puts the two threads that share a row m (different k) in one bank. The pitch is L + 4
//   (PAD_A): the k-th row of sA starts 4k banks further, and with S = 8 the 32 stores of a warp
//   land in 32 different banks.
// Fetch order, tiles and barriers are v05's.

#include "matmul.cuh"
#include "matmul_tiles.cuh"
#include "matmul_vectorized.cuh"

#define PAD_A 4
#define CHUNK_STEP (TPD * 4)  // rows (columns) between a thread's 4 x 4 chunks

extern "C" __global__ void __launch_bounds__(THREADS)
matmul_conflict_free(const elem_t* __restrict__ a, const elem_t* __restrict__ b, elem_t* __restrict__ c, int n)
{
    __shared__ __align__(16) float sA[S][L + PAD_A];
    __shared__ __align__(16) float sB[S][L];
    const int tid = threadIdx.y * TPD + threadIdx.x;
    const int tile_row = blockIdx.y * L, tile_col = blockIdx.x * L;
    const bool vec = (n & 3) == 0;
    float acc[V][V] = {};
    for (int k0 = 0; k0 < n; k0 += S) {
        __syncthreads();
        fetch_slices_vectorized<L + PAD_A>(sA, sB, a, b, tile_row, tile_col, k0, n, vec, tid);
        __syncthreads();
#pragma unroll
        for (int ki = 0; ki < S; ++ki) {
            float av[V], bv[V];
#pragma unroll
            for (int ch = 0; ch < V / 4; ++ch) {
                put4(av, ch * 4, ld_float4(&sA[ki][ch * CHUNK_STEP + threadIdx.y * 4]));
                put4(bv, ch * 4, ld_float4(&sB[ki][ch * CHUNK_STEP + threadIdx.x * 4]));
            }
            outer_product(acc, av, bv);
        }
    }
    store_chunks(c, acc, tile_row + threadIdx.y * 4, CHUNK_STEP, tile_col + threadIdx.x * 4, CHUNK_STEP, n, vec);
}
