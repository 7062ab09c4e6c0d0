// v31's step: v28's stale running max without the tile's row maxima. Each row's exp2 values are taken
// against the running max at once, and the row's partial sum guards them: a sum at most
// 2^RESCALE_LOG2 means every value under it is too. What it does and why is in v31_sum_guard.cu.
// Include it after attn_sm90_kv176.cuh.
//
// Append-only: once a recorded version builds it, a helper here is never changed in place (`report
// same-code` proves that a version's kernel still compiles to the machine code its records ran).
#pragma once

#include "attn_sm90_stale_rows.cuh"  // finish_step's halves, RESCALE_LOG2, rescale_o, pack_p

// The pieces of softmax_tile_sum_guard that v34's softmax shares: each score's exp2 against its row's
// running max, in place, added into the lane's partial sums of the two rows; and each row's largest value
// over the quad, from the starting values mx0 and mx1.
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

template <int S>
__device__ __forceinline__ void quad_row_max(const float (&sc)[S], float& mx0, float& mx1)
{
#pragma unroll
    for (int jj = 0; jj < S / 4; ++jj) {
        mx0 = fmaxf(mx0, fmaxf(sc[4 * jj], sc[4 * jj + 1]));
        mx1 = fmaxf(mx1, fmaxf(sc[4 * jj + 2], sc[4 * jj + 3]));
    }
    mx0 = fmaxf(mx0, __shfl_xor_sync(0xffffffffu, mx0, 1));
    mx1 = fmaxf(mx1, __shfl_xor_sync(0xffffffffu, mx1, 1));
    mx0 = fmaxf(mx0, __shfl_xor_sync(0xffffffffu, mx0, 2));
    mx1 = fmaxf(mx1, __shfl_xor_sync(0xffffffffu, mx1, 2));
}

// region key: exp2 against the running max at once, the row sums as the guard
// The online softmax of one S tile against the running max, with no max taken first: every score
// becomes exp2(s * scale_log2 - m) and is summed into its row's partial sum. If some lane's partial sum
// of a row passed 2^RESCALE_LOG2 (one vote for the warp), the warp takes the rare path: each row's
// largest exp2 value mx over its quad, and a row with mx > 1 moves its max by log2(mx), its values and
// sums scaled by alpha = exp2(m_old - m_new), which the caller applies to O. Otherwise m stays and
// alpha is 1: each value is at most its partial sum, so at most 2^RESCALE_LOG2. Returns whether the
// rare path was taken (the same in every lane of the warp). A lane's partial sum overflows before its
// values do (from about 123 log2 units above the running max) and alpha flushes to 0 past 126: such a
// row comes out as zeros or NaN (v34's softmax_tile_sum_guard_logs keeps it).
template <int S>
__device__ __forceinline__ bool softmax_tile_sum_guard(float (&sc)[S], float& m0, float& m1, float& l0, float& l1,
                                                       float& alpha0, float& alpha1, float scale_log2)
{
    constexpr float guard = (float)(1u << RESCALE_LOG2);
    float ls0 = 0.f, ls1 = 0.f;
    exp2_with_sums(sc, m0, m1, ls0, ls1, scale_log2);
    alpha0 = 1.f;
    alpha1 = 1.f;
    const bool rare = __any_sync(0xffffffffu, fmaxf(ls0, ls1) > guard);
    if (rare) {
        float mx0 = 1.f, mx1 = 1.f;  // a row whose values all stay at or below 1 keeps its max
        quad_row_max(sc, mx0, mx1);
        const float mn0 = m0 + __log2f(mx0), mn1 = m1 + __log2f(mx1);
        alpha0 = ex2(m0 - mn0);  // 1 where the max stays
        alpha1 = ex2(m1 - mn1);
        m0 = mn0;
        m1 = mn1;
#pragma unroll
        for (int jj = 0; jj < S / 4; ++jj) {
            sc[4 * jj] *= alpha0;
            sc[4 * jj + 1] *= alpha0;
            sc[4 * jj + 2] *= alpha1;
            sc[4 * jj + 3] *= alpha1;
        }
        ls0 *= alpha0;
        ls1 *= alpha1;
    }
    l0 = l0 * alpha0 + ls0;
    l1 = l1 * alpha1 + ls1;
    return rare;
}
// endregion

// v15's step j = 1 .. n-1 with the softmax SOFTMAX, which returns whether O needs its rescale: after
// the P.V's wait, P is packed, then O rescaled only then (v28's order; v28's own step is this with its
// softmax, written out before it existed).
template <int MASK, bool (*SOFTMAX)(float (&)[S_REGS], float&, float&, float&, float&, float&, float&, float)>
__device__ __forceinline__ void consumer_step_guarded(const int j, const StepCtx& c, float (&sc)[S_REGS],
                                                      float (&o)[64], u32 (&p)[P_REGS], float& m0, float& m1,
                                                      float& l0, float& l1)
{
    issue_step(j, c, sc, o, p);
    await_scores<MASK>(j, c, sc);
    float alpha0, alpha1;
    const bool moved = SOFTMAX(sc, m0, m1, l0, l1, alpha0, alpha1, c.scale_log2);
    await_pv(j, c, o, p);
    pack_p(sc, p, 1.f);
    if (moved) rescale_o(o, alpha0, alpha1);
}

// v15's step j = 1 .. n-1 with v31's softmax (the kernel's KV176_STEP hook, and v32's DQ_STEP).
template <int MASK>
__device__ __forceinline__ void consumer_step_sum_guard(const int j, const StepCtx& c, float (&sc)[S_REGS],
                                                        float (&o)[64], u32 (&p)[P_REGS], float& m0, float& m1,
                                                        float& l0, float& l1)
{
    consumer_step_guarded<MASK, softmax_tile_sum_guard<S_REGS>>(j, c, sc, o, p, m0, m1, l0, l1);
}
