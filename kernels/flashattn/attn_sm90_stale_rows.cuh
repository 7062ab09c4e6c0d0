// v28's step: v27's stale running max (attn_sm90_stale_max.cuh: the max moves only when a row of
// the warp outgrew it by RESCALE_LOG2), decided per row and without a branch inside the softmax. What
// it does and why is in v28_stale_rows.cu. Include it after attn_sm90_kv176.cuh.
//
// Append-only: once a recorded version builds it, a helper here is never changed in place (`report
// same-code` proves that a version's kernel still compiles to the machine code its records ran).
#pragma once

#include "attn_sm90_stale_max.cuh"  // RESCALE_LOG2

// v28's softmax: the stale max of softmax_tile_stale, decided per row and without a branch. Each of
// the thread's two rows has its own warp vote, taken as soon as that row's max is reduced, and its
// running max moves by a select (alpha is then exp2(m_old - m_new), or exactly 1 when it stays): the
// exp2 values of the first row may start while the second row's max is still being reduced, as in
// v15's schedule. Returns whether either row's max moved in the warp (O then needs its rescale).
template <int S>
__device__ __forceinline__ bool softmax_tile_stale_rows(float (&sc)[S], float& m0, float& m1, float& l0, float& l1,
                                                        float& alpha0, float& alpha1, float scale_log2)
{
    constexpr float grow = (float)RESCALE_LOG2;
    float mx0 = sc[0], mx1 = sc[2];
    lane_row_max(sc, mx0, mx1);
    // region key: each row's vote once its max is reduced, the new max by a select
    mx0 = fmaxf(mx0, __shfl_xor_sync(0xffffffffu, mx0, 1));
    mx0 = fmaxf(mx0, __shfl_xor_sync(0xffffffffu, mx0, 2));
    const float t0 = mx0 * scale_log2;
    const bool move0 = __any_sync(0xffffffffu, t0 > m0 + grow);
    const float mn0 = move0 ? fmaxf(m0, t0) : m0;
    mx1 = fmaxf(mx1, __shfl_xor_sync(0xffffffffu, mx1, 1));
    mx1 = fmaxf(mx1, __shfl_xor_sync(0xffffffffu, mx1, 2));
    const float t1 = mx1 * scale_log2;
    const bool move1 = __any_sync(0xffffffffu, t1 > m1 + grow);
    const float mn1 = move1 ? fmaxf(m1, t1) : m1;
    alpha0 = ex2(m0 - mn0);  // 1 when the max stays
    alpha1 = ex2(m1 - mn1);
    m0 = mn0;
    m1 = mn1;
    // endregion
    float ls0 = 0.f, ls1 = 0.f;
    exp2_with_sums(sc, mn0, mn1, ls0, ls1, scale_log2);
    l0 = l0 * alpha0 + ls0;
    l1 = l1 * alpha1 + ls1;
    return move0 || move1;
}

// v15's step j = 1 .. n-1 with the softmax SOFTMAX, which returns whether O needs its rescale: after
// the P.V's wait, P is packed, then O rescaled only then, so that the branch follows the step's last use
// of the scores. E4M3: S from e4m3 tiles (issue_step's switch, v30). v28's, v30's, v31's and v34's step.
template <int MASK, bool (*SOFTMAX)(float (&)[S_REGS], float&, float&, float&, float&, float&, float&, float),
          bool E4M3 = false>
__device__ __forceinline__ void consumer_step_guarded(const int j, const StepCtx& c, float (&sc)[S_REGS],
                                                      float (&o)[64], u32 (&p)[P_REGS], float& m0, float& m1,
                                                      float& l0, float& l1)
{
    issue_step<HALF_BYTES, E4M3>(j, c, sc, o, p);
    await_scores<MASK>(j, c, sc);
    float alpha0, alpha1;
    const bool moved = SOFTMAX(sc, m0, m1, l0, l1, alpha0, alpha1, c.scale_log2);
    await_pv(j, c, o, p);
    pack_p(sc, p, 1.f);
    if (moved) rescale_o(o, alpha0, alpha1);
}

// v15's step j = 1 .. n-1 with v28's softmax (the kernel's KV176_STEP hook).
template <int MASK>
__device__ __forceinline__ void consumer_step_stale_rows(const int j, const StepCtx& c, float (&sc)[S_REGS],
                                                         float (&o)[64], u32 (&p)[P_REGS], float& m0, float& m1,
                                                         float& l0, float& l1)
{
    consumer_step_guarded<MASK, softmax_tile_stale_rows<S_REGS>>(j, c, sc, o, p, m0, m1, l0, l1);
}
