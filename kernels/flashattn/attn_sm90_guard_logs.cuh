// v34's step: v31's softmax (exp2 values against the running max at once, the row sums as the guard)
// with a rare path that keeps every finite value (softmax_tile_sum_guard_with's LOGS, attn_sm90_sum_guard.cuh),
// in v31's step (consumer_step_guarded). What it does and why is in v34_guarded_range.cu. Include it after
// attn_sm90_kv176.cuh.
//
// Append-only: once a recorded version builds it, a helper here is never changed in place (`report
// same-code` proves that a version's kernel still compiles to the machine code its records ran).
#pragma once

#include "attn_sm90_sum_guard.cuh"  // softmax_tile_sum_guard_with, consumer_step_guarded

// region key: the rare path rescales in the log2 domain and sums again
// v31's softmax_tile_sum_guard, whose rare path multiplied the values and the lane's partial sums by
// alpha. A lane's sum of a row overflows before any of its values does (about 123 log2 units above the
// running max), and alpha = exp2(m_old - m_new) flushes to 0 once the max moves by 126 or more, so
// there v31 returned a row of zeros or NaN. Here the rare path moves each row's max by log2(mx) as v31
// does, then takes each value again as exp2(log2(p) - log2(mx)) (exact where a product with alpha would
// flush) and the partial sums again from those. Only a value that itself overflows (a score 128 log2
// units or more above the running max) makes the row NaN. O and l are still rescaled by alpha: where it
// flushes to 0, what they held is below 2^-126 of the new values.
template <int S>
__device__ __forceinline__ bool softmax_tile_sum_guard_logs(float (&sc)[S], float& m0, float& m1, float& l0,
                                                            float& l1, float& alpha0, float& alpha1, float scale_log2)
{
    return softmax_tile_sum_guard_with<true>(sc, m0, m1, l0, l1, alpha0, alpha1, scale_log2);
}
// endregion

// v34's step (a kernel's step hook: DQ_STEP, KV176_STEP).
template <int MASK>
__device__ __forceinline__ void consumer_step_guard_logs(const int j, const StepCtx& c, float (&sc)[S_REGS],
                                                         float (&o)[64], u32 (&p)[P_REGS], float& m0, float& m1,
                                                         float& l0, float& l1)
{
    consumer_step_guarded<MASK, softmax_tile_sum_guard_logs<S_REGS>>(j, c, sc, o, p, m0, m1, l0, l1);
}
