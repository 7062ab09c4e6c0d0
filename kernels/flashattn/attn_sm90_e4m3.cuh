// v30's e4m3 scores: Q and K rounded to e4m3 (fp8, 3 mantissa bits) by a pass of their own, then
// v15's kernel with S = Q K^T as an e4m3 product (k32 steps at twice the f16 rate) and everything
// else as before (P and V f16, the softmax and O f32). What it does and why is in v30_fp8_scores.cu.
// Include it after attn_sm90_kv176.cuh.
//
// Append-only: once a recorded version builds it, a helper here is never changed in place (`report
// same-code` proves that a version's kernel still compiles to the machine code its records ran).
#pragma once

#include "attn_sm90_stale_rows.cuh"

#define K8_TILE_BYTES (BLOCK_N * 128)  // a K tile in e4m3: BLOCK_N rows of 128 bytes, one swizzle row each
#define Q8_TILE_BYTES (BLOCK_M * 128)  // the Q tile in e4m3

// --------------------------------------------------------------------------- the rounding pass

// Eight f16 (16 bytes) to eight e4m3 (8 bytes), each rounded to nearest and saturated at +-448
// (cvt.rn.satfinite: a finite f16 beyond e4m3's range becomes its largest value, not NaN).
__device__ __forceinline__ uint2 e4m3x8(uint4 h)
{
    unsigned short b0, b1, b2, b3;
    asm("cvt.rn.satfinite.e4m3x2.f16x2 %0, %1;" : "=h"(b0) : "r"(h.x));
    asm("cvt.rn.satfinite.e4m3x2.f16x2 %0, %1;" : "=h"(b1) : "r"(h.y));
    asm("cvt.rn.satfinite.e4m3x2.f16x2 %0, %1;" : "=h"(b2) : "r"(h.z));
    asm("cvt.rn.satfinite.e4m3x2.f16x2 %0, %1;" : "=h"(b3) : "r"(h.w));
    return make_uint2((u32)b0 | ((u32)b1 << 16), (u32)b2 | ((u32)b3 << 16));
}

// Q and K (n8 groups of eight f16 each) into q8 and k8, in the same element order: one pass over both,
// 16-byte loads and 8-byte stores, a grid-stride loop.
extern "C" __global__ void __launch_bounds__(256)
round_qk_e4m3(const uint4* __restrict__ q, const uint4* __restrict__ k, uint2* __restrict__ q8,
              uint2* __restrict__ k8, unsigned long long n8)
{
    const u64 stride = (u64)gridDim.x * blockDim.x;
    for (u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x; i < n8; i += stride) {
        const uint4 a = __ldg(q + i), b = __ldg(k + i);
        q8[i] = e4m3x8(a);
        k8[i] = e4m3x8(b);
    }
}

// --------------------------------------------------------------------------- the kernel's hooks

// Q's 128 x 128 e4m3 tile: one box of 128 rows x 128 bytes (KV176_LOAD_Q).
__device__ __forceinline__ void load_q_e4m3(u32 dst, const TmaDesc* map, int row0, int head, u32 bar)
{
    tma_load_box_3d(dst, map, 0, row0, head, bar);
}

// region key: K's e4m3 tiles and the step that multiplies them
// K tile j into ring entry `it` (KV176_PRODUCE_K), as produce_kv_tile does with f16 tiles but in the
// first K8_TILE_BYTES of the slot. In a cluster of two, CTA rank r copies the tile's r-th half of rows
// (a row is one swizzle row, so the halves cannot be column halves) to both CTAs; a box past the end of
// the sequence is zero-filled and still counts its bytes.
__device__ __forceinline__ void produce_k_e4m3(const int it, const int j, u32 ring, u32 bar_full, u32 bar_empty,
                                               const TmaDesc* map, int head, u32 rank, bool leader)
{
    const int s = it % STAGES;
    const u32 phase = (u32)(it / STAGES) & 1u;
    mbar_wait(bar_empty + 8 * s, phase ^ 1u);
    if (leader) {
        mbar_arrive_expect_tx(bar_full + 8 * s, K8_TILE_BYTES);
        const u32 dst = ring + s * KV_TILE_BYTES;
#if CLUSTER == 1
        tma_load_box_3d(dst, map, 0, j * BLOCK_N, head, bar_full + 8 * s);
#else
        tma_load_box_multicast_3d(dst + rank * (K8_TILE_BYTES / 2), map, 0, j * BLOCK_N + (int)rank * (BLOCK_N / 2),
                                  head, bar_full + 8 * s, (unsigned short)0x3);
#endif
    }
}

// v28's step (its stale-max softmax) with S_j from the e4m3 tiles (the kernel's KV176_STEP hook).
template <int MASK>
__device__ __forceinline__ void consumer_step_e4m3(const int j, const StepCtx& c, float (&sc)[S_REGS], float (&o)[64],
                                                   u32 (&p)[P_REGS], float& m0, float& m1, float& l0, float& l1)
{
    consumer_step_guarded<MASK, softmax_tile_stale_rows<S_REGS>, true>(j, c, sc, o, p, m0, m1, l0, l1);
}
// endregion
