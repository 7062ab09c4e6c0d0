// v20: v19 with an epilogue of 16-byte stores. v19 (as v15-v17) writes O straight from the
// accumulator layout: each thread holds two fp16 of a row per 8-column group, so a warp's store
// instruction puts 4 bytes at 32 places (8 rows x 4 lanes x 4 B, sixteen bytes per row), and a
// consumer issues 64 of them per unit. v18's trace of v17 shows this epilogue taking longer than a whole
// kv step of the tensor cores. Here the four lanes of a quad (which share rows r and r + 8)
// first exchange their pairs with three shuffles per group of four 8-column chunks, so that lane
// q holds all eight fp16 of chunk 4m + q; each thread then writes its row chunks with 16-byte
// stores: 16 instead of 64 per thread, 64 contiguous bytes per row and warp instruction.
//
// Everything else is v19's (its kernel, attn_sm90_double_q.cuh): only the STORE_O hook changes.

#include "common/sm90/ptx.cuh"

// o0 points at row r, column col = 2 * (lane & 3) of this thread's O block (v19's hook contract).
__device__ __forceinline__ void store_o_wide(const float (&o)[64], float inv0, float inv1, u16* o0, int lane);

#define STORE_O store_o_wide
#include "attn_sm90_double_q.cuh"

__device__ __forceinline__ u32 pick4(u32 a0, u32 a1, u32 a2, u32 a3, int i)
{
    return i == 0 ? a0 : i == 1 ? a1 : i == 2 ? a2 : a3;
}

// A 4 x 4 transpose of f16x2 pairs within a quad: lane q holds a[i] = its pair of chunk i; after,
// b[p] = lane p's pair of chunk q (so b[0..3] are chunk q's eight fp16 in column order). Round r
// sends a[(q + r) % 4] and receives, from lane (q - r) % 4, that lane's pair of chunk q.
__device__ __forceinline__ void quad_transpose(const u32 (&a)[4], u32 (&b)[4], int q)
{
    b[0] = b[1] = b[2] = b[3] = 0u;
#pragma unroll
    for (int r = 0; r < 4; ++r) {
        const u32 sent = pick4(a[0], a[1], a[2], a[3], (q + r) & 3);
        const int src = (q - r) & 3;
        const u32 got = r == 0 ? sent : __shfl_sync(0xffffffffu, sent, (q - r) & 3, 4);
        b[0] = src == 0 ? got : b[0];
        b[1] = src == 1 ? got : b[1];
        b[2] = src == 2 ? got : b[2];
        b[3] = src == 3 ? got : b[3];
    }
}

__device__ __forceinline__ void store_o_wide(const float (&o)[64], float inv0, float inv1, u16* o0, int lane)
{
    const int q = lane & 3;
    u16* row0 = o0 - 2 * q;  // column 0 of row r
    u16* row1 = row0 + 8 * HEAD_DIM;
#pragma unroll
    for (int m = 0; m < 4; ++m) {
        u32 lo[4], hi[4], blo[4], bhi[4];
#pragma unroll
        for (int i = 0; i < 4; ++i) {
            const int jj = 4 * m + i;
            lo[i] = pack_half2(o[4 * jj] * inv0, o[4 * jj + 1] * inv0);
            hi[i] = pack_half2(o[4 * jj + 2] * inv1, o[4 * jj + 3] * inv1);
        }
        quad_transpose(lo, blo, q);
        quad_transpose(hi, bhi, q);
        st_global_v4(row0 + 8 * (4 * m + q), blo[0], blo[1], blo[2], blo[3]);
        st_global_v4(row1 + 8 * (4 * m + q), bhi[0], bhi[1], bhi[2], bhi[3]);
    }
}
