// v07's kernel body, double buffering: the next S-deep slices of A and B are copied into shared
// memory by cp.async while the threads multiply the current ones, so the copy's latency hides
// behind the arithmetic instead of stalling every thread at a barrier.
//
// Two stages of shared memory, each holding A's slice row-major (sA[m][k], the row padded to
// S + PAD_K elements so that a copy's destination stays aligned and two rows four apart fall 16
// banks apart) and B's slice (sB[k][m]). Before the loop the first slice is put in flight; in the
// loop, slice s + 1 is put in flight into the other stage, then the thread waits for all but that
// newest group of copies (slice s has landed), the barrier makes every thread's copies visible,
// the threads compute on slice s, and a second barrier keeps the next iteration from refilling
// the stage anyone still reads. Each copy moves four elements (16 bytes fp32, 8 bytes fp16),
// zero-filled outside the matrix; where n % 4 != 0 the quads are not aligned and are written by
// plain guarded loads and stores instead (copy4_async), covered by the same barriers.
//
// Reads L, S and THREADS (defined by the version before including it). The version supplies the
// mapping of threads to outputs as a type `Threads` with
//   static constexpr int M, N;  the thread's outputs, acc[M][N]
//   void compute(const elem_t (*sa)[S + PAD_K], const elem_t (*sb)[L], float (&acc)[M][N]) const;
//   void store(elem_t* c, const float (&acc)[M][N], int tile_row, int tile_col, int n, bool vec) const;
// and calls double_buffered_tile(a, b, c, n, threads) from its kernel.
#pragma once

#include "matmul.cuh"

#define PAD_K 4

// this thread's share of slice k0 of A (L x S) and of B (S x L), four elements per copy
__device__ __forceinline__ void fetch_slice_async(elem_t (*sa)[S + PAD_K], elem_t (*sb)[L], const elem_t* __restrict__ a,
                                                  const elem_t* __restrict__ b, int tile_row, int tile_col, int k0,
                                                  int n, bool vec, int tid)
{
#pragma unroll
    for (int q = tid; q < L * S / 4; q += THREADS) {
        const int m = q / (S / 4), k = (q % (S / 4)) * 4;
        copy4_async(&sa[m][k], a, tile_row + m, k0 + k, n, vec);
    }
#pragma unroll
    for (int q = tid; q < S * L / 4; q += THREADS) {
        const int k = q / (L / 4), m = (q % (L / 4)) * 4;
        copy4_async(&sb[k][m], b, k0 + k, tile_col + m, n, vec);
    }
}

template <class Threads>
__device__ __forceinline__ void double_buffered_tile(const elem_t* __restrict__ a, const elem_t* __restrict__ b,
                                                     elem_t* __restrict__ c, int n, const Threads& threads)
{
    __shared__ __align__(16) elem_t sA[2][L][S + PAD_K];
    __shared__ __align__(16) elem_t sB[2][S][L];
    const int tid = threadIdx.y * blockDim.x + threadIdx.x;
    const int tile_row = blockIdx.y * L, tile_col = blockIdx.x * L;
    const bool vec = (n & 3) == 0;
    const int slices = (n + S - 1) / S;
    float acc[Threads::M][Threads::N] = {};
    fetch_slice_async(sA[0], sB[0], a, b, tile_row, tile_col, 0, n, vec, tid);
    cp_async_commit();
    for (int s = 0; s < slices; ++s) {
        if (s + 1 < slices)
            fetch_slice_async(sA[(s + 1) & 1], sB[(s + 1) & 1], a, b, tile_row, tile_col, (s + 1) * S, n, vec, tid);
        cp_async_commit();  // an empty group after the last slice, so that the wait below means the same
        cp_async_wait_pending<1>();  // this thread's copies of slice s have landed
        __syncthreads();             // and every thread's
        threads.compute(sA[s & 1], sB[s & 1], acc);
        __syncthreads();  // nobody reads stage s & 1 any more: iteration s + 1 may refill it
    }
    threads.store(c, acc, tile_row, tile_col, n, vec);
}
