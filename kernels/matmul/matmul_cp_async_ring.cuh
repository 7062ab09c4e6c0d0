// v21's kernel body: the slices of A and B go from global to shared memory by cp.async into a ring
// of STAGES stages, STAGES - 1 slices ahead of the one being multiplied, with no register holding
// them on the way (v09-v17 carried the next slice in registers and stored it at the slice's end).
//
// - Layout: A is kept as it is in memory, row-major, sA[m][k] (S elements a row of a stage), so a
//   16-byte copy moves four k of one row; B as sB[k][n]. A lane reads A four k at a time: one
//   float4 a row gives the row's values for four steps; B a float4 of a k row each step.
// - Lanes: a warp owns WM x WN of C as 8 lane rows x 4 lane columns; lane (r, c) holds rows
//   r + 8i (i < WM/8) and columns 4c + 16j .. + 3 (j < WN/16): TM = WM/8 rows by TN = WN/4
//   columns. At WM = WN = 64, 8 x 16 outputs; per four steps 8 float4 of A and 16 of B, as many
//   shared loads a step (six) as v17's 16 x 8 lanes.
// - Banks: the 8 lane rows of a warp read rows r + 8i, eight consecutive rows, at the same k. A
//   row of S fp32 is S/8 of a 128-byte line, so rows 32/S apart would share banks; the k chunks of
//   a row are XORed with (row / (32/S)) % (S/4), which puts the eight rows' float4s in eight
//   different bank quads. B's reads: four distinct float4s a warp (64 bytes), the rest broadcast.
// - Pipeline, one barrier a slice: wait for slice s's copies, pass the barrier (every thread's
//   copies of slice s have landed; every thread is done with slice s - 1), issue slice s + STAGES -
//   1 into the stage slice s - 1 used, multiply slice s. A commit group every iteration, empty past
//   the last slice, so the wait's count holds.
// - Edges: copy4_async (matmul.cuh) zero-fills what lies outside the matrix, the partial last slice
//   included; where n % 4 != 0 it loads and stores the four elements itself (the barrier covers it).
//
// Reads BM, BN, WM, WN, S and STAGES (defaults below).
#pragma once

#include "matmul.cuh"

// the tiles unless the version or its CONFIG sets them: cuBLAS's fp32 shape at 4096
#ifndef BM
#define BM 256  // rows of the CTA's tile
#endif
#ifndef BN
#define BN 128  // columns of the CTA's tile
#endif
#ifndef WM
#define WM 64
#endif
#ifndef WN
#define WN 64
#endif
#ifndef S
#define S 8
#endif
#ifndef STAGES
#define STAGES 3
#endif

#define THREADS ((BM / WM) * (BN / WN) * 32)
#define TM (WM / 8)  // a lane's rows
#define TN (WN / 4)  // a lane's columns
#define KQ (S / 4)  // float4 chunks of k in a row of sA
#define A_CHUNKS (BM * KQ)  // 4-element chunks of A's slice
#define B_CHUNKS (S * BN / 4)

static_assert(S % 4 == 0 && S <= 32 && 32 % S == 0, "a row of sA is whole chunks inside a 128-byte line");
static_assert(WM % 8 == 0 && WN % 16 == 0 && BM % WM == 0 && BN % WN == 0, "lanes tile the warp, warps the CTA");
static_assert(A_CHUNKS % THREADS == 0 && B_CHUNKS % THREADS == 0, "every thread copies whole chunks");
static_assert(STAGES >= 2, "a ring of at least two stages");

// where chunk q (k from 4q) of row m lies in a stage of sA: the chunks XORed by the row's group
__device__ __forceinline__ int a_chunk_at(int m, int q) { return m * S + ((q ^ ((m / (32 / S)) % KQ)) * 4); }

// this thread's chunks of slice `slice` into the stage at (sa, sb)
__device__ __forceinline__ void issue_slice(elem_t* sa, elem_t* sb, const elem_t* __restrict__ a,
                                            const elem_t* __restrict__ b, int tile_row, int tile_col, int slice,
                                            int n, bool vec)
{
    const int k0 = slice * S;
#pragma unroll
    for (int i = 0; i < A_CHUNKS / THREADS; ++i) {
        const int c = threadIdx.x + i * THREADS, m = c / KQ, q = c % KQ;
        copy4_async(sa + a_chunk_at(m, q), a, tile_row + m, k0 + q * 4, n, vec);
    }
#pragma unroll
    for (int i = 0; i < B_CHUNKS / THREADS; ++i) {
        const int c = threadIdx.x + i * THREADS, k = c / (BN / 4), col = c % (BN / 4) * 4;
        copy4_async(sb + k * BN + col, b, k0 + k, tile_col + col, n, vec);
    }
}

// the CTA's BM x BN tile of C = A B (blockIdx.x along the columns, blockIdx.y along the rows)
__device__ __forceinline__ void ring_tile(const elem_t* __restrict__ a, const elem_t* __restrict__ b,
                                          elem_t* __restrict__ c, int n)
{
    __shared__ __align__(16) elem_t sA[STAGES][BM * S];
    __shared__ __align__(16) elem_t sB[STAGES][S * BN];
    const int tile_row = blockIdx.y * BM, tile_col = blockIdx.x * BN;
    const bool vec = (n & 3) == 0;
    const int slices = (n + S - 1) / S;
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    const int row0 = warp / (BN / WN) * WM + lane / 4;  // the lane's first row in the tile; then every 8th
    const int col0 = warp % (BN / WN) * WN + lane % 4 * 4;  // its first column; then every 16th, four at a time
    float acc[TM][TN] = {};

#pragma unroll
    for (int s = 0; s < STAGES - 1; ++s) {
        if (s < slices) issue_slice(sA[s], sB[s], a, b, tile_row, tile_col, s, n, vec);
        cp_async_commit();
    }
    for (int s = 0; s < slices; ++s) {
        cp_async_wait_pending<STAGES - 2>();
        __syncthreads();  // slice s is whole in its stage; every thread is done with slice s - 1's stage
        const int next = s + STAGES - 1;
        if (next < slices) issue_slice(sA[next % STAGES], sB[next % STAGES], a, b, tile_row, tile_col, next, n, vec);
        cp_async_commit();
        const elem_t* sa = sA[s % STAGES];
        const elem_t* sb = sB[s % STAGES];
#pragma unroll
        for (int q = 0; q < KQ; ++q) {
            float av[TM][4];
#pragma unroll
            for (int i = 0; i < TM; ++i) {
                const float4 v = lds4(sa + a_chunk_at(row0 + 8 * i, q));
                av[i][0] = v.x;
                av[i][1] = v.y;
                av[i][2] = v.z;
                av[i][3] = v.w;
            }
#pragma unroll
            for (int kk = 0; kk < 4; ++kk) {
                float bv[TN];
#pragma unroll
                for (int j = 0; j < TN / 4; ++j) put4(bv, 4 * j, lds4(sb + (q * 4 + kk) * BN + col0 + 16 * j));
#pragma unroll
                for (int i = 0; i < TM; ++i)
#pragma unroll
                    for (int j = 0; j < TN; ++j) acc[i][j] = fmaf(av[i][kk], bv[j], acc[i][j]);
            }
        }
    }
    cp_async_wait_pending<0>();  // no copy outlives the CTA (the last groups are empty)
#pragma unroll
    for (int i = 0; i < TM; ++i)
#pragma unroll
        for (int j = 0; j < TN / 4; ++j) {
            const float* r = &acc[i][4 * j];
            store4_if_inside(c, tile_row + row0 + 8 * i, tile_col + col0 + 16 * j, n, make_float4(r[0], r[1], r[2], r[3]),
                             vec);
        }
}
