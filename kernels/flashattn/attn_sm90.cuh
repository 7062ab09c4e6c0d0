// The attention pieces the sm_90a flashattn versions (v06 on) share: the producer's tile copies
// into the 128-byte-swizzled layout (cp.async, v06-v12; two 2-D TMA boxes, v13-v14), the
// consumers' steps (S = Q K^T and O += P V as wgmma sequences, the online softmax, P packed into
// A fragments, O rescaled, the partial last tile masked) and the named-barrier turns of the two
// consumer warpgroups. The layout and fragment facts these rely on are at the top of v06_wgmma.cu.
//
// The consumer steps take their width from their arrays: S = Q K^T of a kv tile of N = 128 or
// 176 rows is S = N / 2 f32 registers a thread (64 or 88), its P N / 4 f16x2 registers; one
// helper serves both widths (v12 and v15 built v06's 128-row steps generalised to BLOCK_N).
//
// Configuration macros, read where this header is included (define them before it):
//   HALF_BYTES  bytes of one 64-column half of the 128-row Q tile (16384 in every version; required);
//   PINGPONG    turn_sync / turn_arrive: 1 takes turns, 0 compiles them out (default 1).
//
// Append-only: a helper here, once a recorded version uses it, is never changed in place. A
// different behaviour gets a new helper with its own name (load_tile copies with cp.async,
// load_tile_tma with TMA), and a version calls the one it used.
#pragma once

#include "common/sm90/cp_async.cuh"
#include "common/sm90/ptx.cuh"
#include "common/sm90/tma.cuh"
#include "common/sm90/wgmma.cuh"
#include "common/sm90/wgmma_m64n64.cuh"

#ifndef HALF_BYTES
#error "flashattn/attn_sm90.cuh: define HALF_BYTES (one 64-column half of the Q tile) before including it"
#endif
#ifndef PINGPONG
#define PINGPONG 1
#endif

// --------------------------------------------------------------------------- producer

// One 128 x 128 fp16 tile (32 KB contiguous in global memory: 128 rows of 256 B) into the
// swizzled layout. Thread t copies 16-byte chunk c16 = t % 16 of rows 8i + t / 16, i = 0..15:
// a warp reads 512 contiguous bytes per instruction. Since row % 8 == t / 16 for every i, the
// swizzled destination of thread t is one fixed offset plus i * 1024.
__device__ __forceinline__ void load_tile(u32 dst, const char* src)
{
#pragma unroll
    for (int i = 0; i < 16; ++i) cp_async16(dst + i * 1024, src + i * 2048);
}

// One 128 x 128 fp16 tile (rows row0 .. row0 + 127 of the [B*H*S, 128] view) with TMA: two
// boxes of a 2-D tensor map, one per 64-column half, HALF_BYTES apart in shared memory, both
// completing on `bar`, which the caller armed with the tile's TILE_BYTES.
__device__ __forceinline__ void load_tile_tma(u32 dst, const TmaDesc* map, int row0, u32 bar)
{
    tma_load_box_2d(dst, map, 0, row0, bar);
    tma_load_box_2d(dst + HALF_BYTES, map, 64, row0, bar);
}

// --------------------------------------------------------------------------- consumer steps

// One k16 step of S (+)= Q K^T: m64n128k16 for 128-row K tiles (S = 64), m64n176k16 for 176 (S = 88),
// m64n64k16 for 64 (S = 32, v40).
template <int S>
__device__ __forceinline__ void wgmma_qk(float (&d)[S], u64 desc_a, u64 desc_b, u32 accumulate)
{
    static_assert(S == 64 || S == 88 || S == 32, "S accumulators for a 64-, 128- or 176-row kv tile");
    if constexpr (S == 88)
        wgmma_m64n176k16_ss(d, desc_a, desc_b, accumulate);
    else if constexpr (S == 32)
        wgmma_m64n64k16_ss(d, desc_a, desc_b, accumulate);
    else
        wgmma_m64n128k16_ss(d, desc_a, desc_b, accumulate);
}

// S (64 x N fp32) = Q_wg (64 x 128) . K_tile^T: 8 k16 steps; within a 64-column half a step
// is +32 B on the start address (inside the 128-byte swizzle row), the second half is
// Q_HALF further for Q (HALF_BYTES, a 128-row tile's, unless a version holds Q otherwise: v26's
// 64-row pieces) and N * 128 B further for K. The first step ignores the old accumulator (scale-d = 0).
template <int S, int Q_HALF = HALF_BYTES>
__device__ __forceinline__ void issue_qk(float (&sc)[S], u64 desc_q, u64 desc_k_stage)
{
    constexpr int k_half_bytes = S * 256;  // N rows x 128 B, N = 2 S
#pragma unroll
    for (int kk = 0; kk < 8; ++kk) {
        const u64 qoff = (u64)(((kk >> 2) * Q_HALF + (kk & 3) * 32) >> 4);
        const u64 koff = (u64)(((kk >> 2) * k_half_bytes + (kk & 3) * 32) >> 4);
        wgmma_qk(sc, desc_q + qoff, desc_k_stage + koff, kk > 0 ? 1u : 0u);
    }
}

// O (64 x 128 fp32) += P (64 x N kv, f16 A fragments) . V_tile (N kv x 128 d, N-major): k-chunk
// kc covers kv rows 16kc..16kc+15 = two 8-row groups of 1024 B, i.e. +2048 B; N / 16 = P / 4 chunks.
template <int P>
__device__ __forceinline__ void issue_pv(float (&o)[64], const u32 (&p)[P], u64 desc_v_stage)
{
#pragma unroll
    for (int kc = 0; kc < P / 4; ++kc)
        wgmma_m64n128k16_rs(o, p[4 * kc], p[4 * kc + 1], p[4 * kc + 2], p[4 * kc + 3],
                            desc_v_stage + (u64)((kc * 2048) >> 4));
}

// Online softmax of one S tile, in place: sc becomes exp2(s * scale_log2 - m). Thread rows:
// r (sc[4j], sc[4j+1]) and r + 8 (sc[4j+2], sc[4j+3]), j = 0 .. S/4 - 1; the 4 lanes of a quad
// share the rows, hence the shuffles over lanes 1 and 2. The running max m is kept in the
// log2 domain of the scaled scores (scale_log2 = log2(e)/sqrt(D) > 0, so max(s)*scale ==
// max(s*scale)): each score costs one FMA and one ex2. l keeps this thread's partial row sums
// (reduced over the quad only in the epilogue); alpha = exp2(m_old - m_new) rescales O and l.
template <bool SUMS, int S>
__device__ __forceinline__ void softmax_tile_with(float (&sc)[S], float& m0, float& m1, float& l0, float& l1,
                                                  float& alpha0, float& alpha1, float scale_log2)
{
    float mx0 = sc[0], mx1 = sc[2];
#pragma unroll
    for (int jj = 0; jj < S / 4; ++jj) {
        mx0 = fmaxf(mx0, fmaxf(sc[4 * jj], sc[4 * jj + 1]));
        mx1 = fmaxf(mx1, fmaxf(sc[4 * jj + 2], sc[4 * jj + 3]));
    }
    mx0 = fmaxf(mx0, __shfl_xor_sync(0xffffffffu, mx0, 1));
    mx1 = fmaxf(mx1, __shfl_xor_sync(0xffffffffu, mx1, 1));
    mx0 = fmaxf(mx0, __shfl_xor_sync(0xffffffffu, mx0, 2));
    mx1 = fmaxf(mx1, __shfl_xor_sync(0xffffffffu, mx1, 2));
    const float mn0 = fmaxf(m0, mx0 * scale_log2), mn1 = fmaxf(m1, mx1 * scale_log2);
    alpha0 = ex2(m0 - mn0);  // ex2(-inf) = 0 on the first tile
    alpha1 = ex2(m1 - mn1);
    m0 = mn0;
    m1 = mn1;
    float ls0 = 0.f, ls1 = 0.f;
#pragma unroll
    for (int jj = 0; jj < S / 4; ++jj) {
        sc[4 * jj] = ex2(fmaf(sc[4 * jj], scale_log2, -mn0));
        sc[4 * jj + 1] = ex2(fmaf(sc[4 * jj + 1], scale_log2, -mn0));
        sc[4 * jj + 2] = ex2(fmaf(sc[4 * jj + 2], scale_log2, -mn1));
        sc[4 * jj + 3] = ex2(fmaf(sc[4 * jj + 3], scale_log2, -mn1));
        if constexpr (SUMS) {
            ls0 += sc[4 * jj] + sc[4 * jj + 1];
            ls1 += sc[4 * jj + 2] + sc[4 * jj + 3];
        }
    }
    if constexpr (SUMS) {
        l0 = l0 * alpha0 + ls0;
        l1 = l1 * alpha1 + ls1;
    } else {  // the sums are added elsewhere (v24's add_p_sums): l is only rescaled
        l0 *= alpha0;
        l1 *= alpha1;
    }
}

template <int S>
__device__ __forceinline__ void softmax_tile(float (&sc)[S], float& m0, float& m1, float& l0, float& l1,
                                             float& alpha0, float& alpha1, float scale_log2)
{
    softmax_tile_with<true>(sc, m0, m1, l0, l1, alpha0, alpha1, scale_log2);
}

// fp32 accumulator layout -> f16 A fragments of the P.V product: the accumulator columns
// 16kc..16kc+15 are k-chunk kc, registers p[4kc .. 4kc+3] = pack(d[8kc..+1]), pack(d[8kc+2..+3]),
// pack(d[8kc+4..+5]), pack(d[8kc+6..+7]) (see the fragment facts at the top of v06_wgmma.cu).
template <int S>
__device__ __forceinline__ void pack_p(const float (&sc)[S], u32 (&p)[S / 2], float scale)
{
#pragma unroll
    for (int jj = 0; jj < S / 4; ++jj) {
        p[2 * jj] = pack_half2(sc[4 * jj] * scale, sc[4 * jj + 1] * scale);
        p[2 * jj + 1] = pack_half2(sc[4 * jj + 2] * scale, sc[4 * jj + 3] * scale);
    }
}

// The last kv tile may be partial (S not a multiple of BLOCK_N): scores of columns at or past
// `valid` become -inf, so their exp2 is 0 (the producer zero-filled those K and V rows).
template <int S>
__device__ __forceinline__ void mask_tail(float (&sc)[S], int valid, int col)
{
    const float ninf = __int_as_float(0xff800000);
#pragma unroll
    for (int jj = 0; jj < S / 4; ++jj) {
        const int c = 8 * jj + col;
        if (c >= valid) { sc[4 * jj] = ninf; sc[4 * jj + 2] = ninf; }
        if (c + 1 >= valid) { sc[4 * jj + 1] = ninf; sc[4 * jj + 3] = ninf; }
    }
}

__device__ __forceinline__ void rescale_o(float (&o)[64], float alpha0, float alpha1)
{
#pragma unroll
    for (int jj = 0; jj < 16; ++jj) {
        o[4 * jj] *= alpha0;
        o[4 * jj + 1] *= alpha0;
        o[4 * jj + 2] *= alpha1;
        o[4 * jj + 3] *= alpha1;
    }
}

// --------------------------------------------------------------------------- turns (named barriers)

// The two consumer warpgroups (256 threads) take turns issuing their wgmma on named barriers
// (v08 on). PINGPONG 0 (an ablation for the sweep) drops the turns: each warpgroup then overlaps
// only its own softmax with its own P.V, and the warp schedulers interleave the two as in v06.
__device__ __forceinline__ void turn_sync(u32 id)
{
#if PINGPONG
    asm volatile("bar.sync %0, 256;" ::"r"(id) : "memory");
#endif
}

__device__ __forceinline__ void turn_arrive(u32 id)
{
#if PINGPONG
    asm volatile("bar.arrive %0, 256;" ::"r"(id) : "memory");
#endif
}

// --------------------------------------------------------------------------- epilogue

// The epilogue's row sums: each of a quad's four lanes holds a partial sum of rows r and r + 8.
__device__ __forceinline__ void sum_row_partials(float& l0, float& l1)
{
    l0 += __shfl_xor_sync(0xffffffffu, l0, 1);
    l1 += __shfl_xor_sync(0xffffffffu, l1, 1);
    l0 += __shfl_xor_sync(0xffffffffu, l0, 2);
    l1 += __shfl_xor_sync(0xffffffffu, l1, 2);
}

// O / l to fp16, written from the accumulator registers as f16x2 pairs (each thread: rows r and
// r + 8, columns 8jj + col and + 1; o0 points at row r, column col).
__device__ __forceinline__ void store_o_pairs(const float (&o)[64], float inv0, float inv1, u16* o0, int lane)
{
    u16* o1 = o0 + 8 * HEAD_DIM;
#pragma unroll
    for (int jj = 0; jj < 16; ++jj) {
        st_global_b32(o0 + 8 * jj, pack_half2(o[4 * jj] * inv0, o[4 * jj + 1] * inv0));
        st_global_b32(o1 + 8 * jj, pack_half2(o[4 * jj + 2] * inv1, o[4 * jj + 3] * inv1));
    }
}
