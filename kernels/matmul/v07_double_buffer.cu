// v07: v06's threads and outputs on a double-buffered pipeline: slice s + 1 of A and B is copied
// into shared memory by cp.async while the block computes on slice s (matmul_double_buffer.cuh,
// which this version introduces, holds the pipeline and says how it is synchronised).
//
// What stays v06's: the L x L tile per block of (L/V)^2 threads, each thread's V x V outputs as
// 4 x 4 chunks CHUNK_STEP apart (contiguous float4 reads of sB, float4 stores of C). What
// changes with the copy engine: cp.async cannot transpose, so A's slice sits in shared memory as
// it is in global memory, row-major (sA[m][k], rows padded by PAD_K): the thread reads each of
// its V rows of A as a float4 of four consecutive k and keeps the V float4s for four steps of k
// (two threads' rows four apart, 16 banks apart: no conflict). Every element is read from shared
// memory as often as in v06.

#include "matmul.cuh"
#include "matmul_tiles.cuh"
#define CHUNK_STEP (TPD * 4)

#include "matmul_double_buffer.cuh"

struct ChunkedThreads {
    static constexpr int M = V, N = V;
    int tx, ty;

    __device__ __forceinline__ void compute(const elem_t (*sa)[S + PAD_K], const elem_t (*sb)[L], float (&acc)[V][V]) const
    {
#pragma unroll
        for (int k4 = 0; k4 < S; k4 += 4) {
            float4 arows[V];  // the thread's V rows of A at k4 .. k4 + 3
#pragma unroll
            for (int ch = 0; ch < V / 4; ++ch)
#pragma unroll
                for (int i = 0; i < 4; ++i) arows[ch * 4 + i] = lds4(&sa[ch * CHUNK_STEP + ty * 4 + i][k4]);
#pragma unroll
            for (int kk = 0; kk < 4; ++kk) {
                float av[V], bv[V];
#pragma unroll
                for (int r = 0; r < V; ++r) av[r] = lane_of(arows[r], kk);
#pragma unroll
                for (int ch = 0; ch < V / 4; ++ch) put4(bv, ch * 4, lds4(&sb[k4 + kk][ch * CHUNK_STEP + tx * 4]));
                outer_product(acc, av, bv);
            }
        }
    }

    __device__ __forceinline__ void store(elem_t* c, const float (&acc)[V][V], int tile_row, int tile_col, int n,
                                          bool vec) const
    {
        store_chunks(c, acc, tile_row + ty * 4, CHUNK_STEP, tile_col + tx * 4, CHUNK_STEP, n, vec);
    }
};

extern "C" __global__ void __launch_bounds__(THREADS)
matmul_double_buffer(const elem_t* __restrict__ a, const elem_t* __restrict__ b, elem_t* __restrict__ c, int n)
{
    double_buffered_tile(a, b, c, n, ChunkedThreads{(int)threadIdx.x, (int)threadIdx.y});
}
