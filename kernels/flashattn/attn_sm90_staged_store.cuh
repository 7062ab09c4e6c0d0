// v21's epilogue, the STORE_O hook of the persistent two-Q-buffer kernels (v21 builds v19's kernel
// with it, v23 its own): O / l as fp16, staged through a 16 KB shared-memory buffer per consumer
// warpgroup and written out in whole rows. What it does and why is in v21_staged_stores.cu.
//
// Include it after the kernel's header (it places its buffers after that kernel's tiles and
// barriers, from the same layout macros). A version file declares store_o_staged and names it as
// STORE_O before including the kernel.
//
// Append-only: once a recorded version builds it, it is never changed in place (`report same-code`).
#pragma once

#define STAGE_BYTES (64 * HEAD_DIM * 2)  // one consumer's 64 x 128 fp16 block
#define STAGE_BAR0 3                     // named barriers 3 and 4: one per consumer warpgroup (1-2 are the turns)
// the staging buffers follow v19's barrier block, 1024-aligned
#define STAGE_OFFSET (((Q_BUFFERS * TILE_BYTES + 2 * STAGES * KV_TILE_BYTES + 8 * (4 * STAGES + 2 * Q_BUFFERS)) + 1023) & ~1023)
#if 1024 + STAGE_OFFSET + 2 * STAGE_BYTES > 227 * 1024
#error "the staging buffers do not fit beside v19's tiles: use BLOCK_N 128, STAGES 2, Q_BUFFERS 2"
#endif

// byte offset of 16-byte chunk `chunk` of row `r` in a staging buffer (256-byte rows, swizzled)
__device__ __forceinline__ u32 stage_at(int r, int chunk)
{
    return (u32)(r * (HEAD_DIM * 2) + ((chunk ^ (r & 7)) << 4));
}

// consumer warpgroup cw's staging buffer (its shared-memory address)
__device__ __forceinline__ u32 stage_buffer(int cw)
{
    extern __shared__ __align__(1024) unsigned char smem_raw[];
    return ((smem_u32(smem_raw) + 1023u) & ~1023u) + STAGE_OFFSET + cw * STAGE_BYTES;
}

// O / l of this thread's accumulators into the staging buffer at `stage`, as fp16, 16-byte chunk `chunk`
// of row r at AT(r, chunk): eight stmatrix.x4 at column blocks jj and jj + 1: matrices (rows 0-7, jj),
// (rows 8-15, jj), (rows 0-7, jj + 1), (rows 8-15, jj + 1) of this warp's 16 rows; lane i gives the
// address of row i % 8 of matrix i / 8
template <u32 (*AT)(int, int)>
__device__ __forceinline__ void stage_o_at(const float (&o)[64], float inv0, float inv1, u32 stage, int warp,
                                           int lane)
{
    const int mrow = warp * 16 + (lane & 7) + 8 * ((lane >> 3) & 1);
    const int mcol = lane >> 4;
#pragma unroll
    for (int jj = 0; jj < 16; jj += 2) {
        stmatrix_x4(stage + AT(mrow, jj + mcol),
                    pack_half2(o[4 * jj] * inv0, o[4 * jj + 1] * inv0),
                    pack_half2(o[4 * jj + 2] * inv1, o[4 * jj + 3] * inv1),
                    pack_half2(o[4 * jj + 4] * inv0, o[4 * jj + 5] * inv0),
                    pack_half2(o[4 * jj + 6] * inv1, o[4 * jj + 7] * inv1));
    }
}

// v21's layout: 256-byte rows, chunks swizzled by row (stage_at)
__device__ __forceinline__ void stage_o(const float (&o)[64], float inv0, float inv1, u32 stage, int warp, int lane)
{
    stage_o_at<stage_at>(o, inv0, inv1, stage, warp, lane);
}

__device__ __forceinline__ void store_o_staged(const float (&o)[64], float inv0, float inv1, u16* o0, int lane)
{
    const int cw = (int)(threadIdx.x / 128), tid = (int)(threadIdx.x & 127), warp = tid >> 5;
    const u32 stage = stage_buffer(cw);
    // the block's first row and column in O: o0 is row warp * 16 + lane / 4, column 2 * (lane % 4)
    u16* block = o0 - (warp * 16 + (lane >> 2)) * HEAD_DIM - 2 * (lane & 3);

    stage_o(o, inv0, inv1, stage, warp, lane);
    asm volatile("bar.sync %0, 128;" ::"r"(STAGE_BAR0 + cw) : "memory");
    // row-wise copy: chunk k = tid + 128 i is row k / 16, 16-byte chunk k % 16
#pragma unroll
    for (int i = 0; i < 8; ++i) {
        const int k = tid + 128 * i, r = k >> 4, c = k & 15;
        u32 a, b, x, y;
        ld_shared_v4(stage + stage_at(r, c), a, b, x, y);
        st_global_v4(block + r * HEAD_DIM + 8 * c, a, b, x, y);
    }
}
