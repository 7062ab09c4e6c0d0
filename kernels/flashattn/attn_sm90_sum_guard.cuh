// v31's step: v28's stale running max without the tile's row maxima. Each row's exp2 values are taken
// against the running max at once, and the row's partial sum guards them: a sum at most
// 2^RESCALE_LOG2 means every value under it is too. What it does and why is in v31_sum_guard.cu.
// Include it after attn_sm90_kv176.cuh.
//
// Append-only: once a recorded version builds it, a helper here is never changed in place (`report
// same-code` proves that a version's kernel still compiles to the machine code its records ran).
#pragma once

#include "attn_sm90_stale_rows.cuh"  // consumer_step_guarded, exp2_with_sums, quad_row_max, RESCALE_LOG2

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
//
// LOGS (v34's softmax_tile_sum_guard_logs, attn_sm90_guard_logs.cuh): the rare path takes each value
// again as exp2(log2(p) - log2(mx)) and the partial sums again from those, instead of multiplying both
// by alpha.
template <bool LOGS, int S>
__device__ __forceinline__ bool softmax_tile_sum_guard_with(float (&sc)[S], float& m0, float& m1, float& l0, float& l1,
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
        const float g0 = __log2f(mx0), g1 = __log2f(mx1);
        const float mn0 = m0 + g0, mn1 = m1 + g1;
        alpha0 = ex2(m0 - mn0);  // 1 where the max stays
        alpha1 = ex2(m1 - mn1);
        m0 = mn0;
        m1 = mn1;
        if constexpr (LOGS) {
            ls0 = 0.f;
            ls1 = 0.f;
#pragma unroll
            for (int jj = 0; jj < S / 4; ++jj) {
                sc[4 * jj] = ex2(__log2f(sc[4 * jj]) - g0);
                sc[4 * jj + 1] = ex2(__log2f(sc[4 * jj + 1]) - g0);
                sc[4 * jj + 2] = ex2(__log2f(sc[4 * jj + 2]) - g1);
                sc[4 * jj + 3] = ex2(__log2f(sc[4 * jj + 3]) - g1);
                ls0 += sc[4 * jj] + sc[4 * jj + 1];
                ls1 += sc[4 * jj + 2] + sc[4 * jj + 3];
            }
        } else {
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
    }
    l0 = l0 * alpha0 + ls0;
    l1 = l1 * alpha1 + ls1;
    return rare;
}
// endregion

template <int S>
__device__ __forceinline__ bool softmax_tile_sum_guard(float (&sc)[S], float& m0, float& m1, float& l0, float& l1,
                                                       float& alpha0, float& alpha1, float scale_log2)
{
    return softmax_tile_sum_guard_with<false>(sc, m0, m1, l0, l1, alpha0, alpha1, scale_log2);
}

// v15's step j = 1 .. n-1 with v31's softmax (the kernel's KV176_STEP hook, and v32's DQ_STEP).
template <int MASK>
__device__ __forceinline__ void consumer_step_sum_guard(const int j, const StepCtx& c, float (&sc)[S_REGS],
                                                        float (&o)[64], u32 (&p)[P_REGS], float& m0, float& m1,
                                                        float& l0, float& l1)
{
    consumer_step_guarded<MASK, softmax_tile_sum_guard<S_REGS>>(j, c, sc, o, p, m0, m1, l0, l1);
}
