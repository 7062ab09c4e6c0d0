// v27's step: v15's step (attn_sm90_kv176.cuh's issue_step, then the softmax and the rescale) with a
// running max that moves only when some row of the warp grew by more than RESCALE_LOG2 since it
// last moved (FlashAttention-4's conditional rescaling). What it does and why is in
// v27_stale_max.cu. Include it after attn_sm90_kv176.cuh.
//
// Append-only: once a recorded version builds it, a helper here is never changed in place (`report
// same-code` proves that a version's kernel still compiles to the machine code its records ran).
#pragma once

#ifndef RESCALE_LOG2
#define RESCALE_LOG2 8     // the growth (log2 of the scaled scores) a row's max may have before the max
                           // moves: P stays <= 2^8, which fp16 holds with its full precision
#endif

// Each score's exp2 against its row's running max (m0, m1), in place, added into the lane's partial
// sums of the two rows (ls0, ls1): the loop of v27's softmax, shared by v28's, v31's and v34's.
template <int S>
__device__ __forceinline__ void exp2_with_sums(float (&sc)[S], float m0, float m1, float& ls0, float& ls1,
                                               float scale_log2)
{
#pragma unroll
    for (int jj = 0; jj < S / 4; ++jj) {
        sc[4 * jj] = ex2(fmaf(sc[4 * jj], scale_log2, -m0));
        sc[4 * jj + 1] = ex2(fmaf(sc[4 * jj + 1], scale_log2, -m0));
        sc[4 * jj + 2] = ex2(fmaf(sc[4 * jj + 2], scale_log2, -m1));
        sc[4 * jj + 3] = ex2(fmaf(sc[4 * jj + 3], scale_log2, -m1));
        ls0 += sc[4 * jj] + sc[4 * jj + 1];
        ls1 += sc[4 * jj + 2] + sc[4 * jj + 3];
    }
}

// Each row's largest score in this lane (lane_row_max), and over the quad (quad_row_max), from the
// starting values mx0 and mx1: v27's reduction, shared by v28's (the lane's part), v31's and v34's.
template <int S>
__device__ __forceinline__ void lane_row_max(const float (&sc)[S], float& mx0, float& mx1)
{
#pragma unroll
    for (int jj = 0; jj < S / 4; ++jj) {
        mx0 = fmaxf(mx0, fmaxf(sc[4 * jj], sc[4 * jj + 1]));
        mx1 = fmaxf(mx1, fmaxf(sc[4 * jj + 2], sc[4 * jj + 3]));
    }
}

template <int S>
__device__ __forceinline__ void quad_row_max(const float (&sc)[S], float& mx0, float& mx1)
{
    lane_row_max(sc, mx0, mx1);
    mx0 = fmaxf(mx0, __shfl_xor_sync(0xffffffffu, mx0, 1));
    mx1 = fmaxf(mx1, __shfl_xor_sync(0xffffffffu, mx1, 1));
    mx0 = fmaxf(mx0, __shfl_xor_sync(0xffffffffu, mx0, 2));
    mx1 = fmaxf(mx1, __shfl_xor_sync(0xffffffffu, mx1, 2));
}

// region key: the running max moves only when a row of the warp outgrew it by RESCALE_LOG2
// The online softmax of one S tile against a stale running max. The tile's row maxima are taken as
// in softmax_tile; the warp votes on whether any of its 16 rows exceeds its running max by more than
// RESCALE_LOG2. Only then does every row's max move to its new value, with alpha = exp2(m_old - m_new)
// for l here and for O in the caller; otherwise m, l and O stay as they are and the tile's exp2 values
// are taken against the old max (each at most 2^RESCALE_LOG2). Returns whether the max moved (the same
// in every lane of the warp).
template <int S>
__device__ __forceinline__ bool softmax_tile_stale(float (&sc)[S], float& m0, float& m1, float& l0, float& l1,
                                                   float& alpha0, float& alpha1, float scale_log2)
{
    float mx0 = sc[0], mx1 = sc[2];
    quad_row_max(sc, mx0, mx1);
    const float t0 = mx0 * scale_log2, t1 = mx1 * scale_log2;
    constexpr float grow = (float)RESCALE_LOG2;
    const bool moved = __any_sync(0xffffffffu, t0 > m0 + grow || t1 > m1 + grow);
    alpha0 = alpha1 = 1.f;
    if (moved) {
        const float mn0 = fmaxf(m0, t0), mn1 = fmaxf(m1, t1);
        alpha0 = ex2(m0 - mn0);
        alpha1 = ex2(m1 - mn1);
        m0 = mn0;
        m1 = mn1;
        l0 *= alpha0;
        l1 *= alpha1;
    }
    float ls0 = 0.f, ls1 = 0.f;
    exp2_with_sums(sc, m0, m1, ls0, ls1, scale_log2);
    l0 += ls0;
    l1 += ls1;
    return moved;
}

// The second half of a step (finish_step's, attn_sm90_kv176.cuh) with the stale max: O is rescaled
// only when the max moved.
template <int MASK>
__device__ __forceinline__ void finish_step_stale(const int j, const StepCtx& c, float (&sc)[S_REGS], float (&o)[64],
                                                  u32 (&p)[P_REGS], float& m0, float& m1, float& l0, float& l1)
{
    await_scores<MASK>(j, c, sc);
    float alpha0, alpha1;
    const bool moved = softmax_tile_stale(sc, m0, m1, l0, l1, alpha0, alpha1, c.scale_log2);
    await_pv(j, c, o, p);
    if (moved) rescale_o(o, alpha0, alpha1);
    pack_p(sc, p, 1.f);
}
// endregion

// v15's step j = 1 .. n-1 with the stale max (the kernel's KV176_STEP hook).
template <int MASK>
__device__ __forceinline__ void consumer_step_stale(const int j, const StepCtx& c, float (&sc)[S_REGS], float (&o)[64],
                                                    u32 (&p)[P_REGS], float& m0, float& m1, float& l0, float& l1)
{
    issue_step(j, c, sc, o, p);
    finish_step_stale<MASK>(j, c, sc, o, p, m0, m1, l0, l1);
}
