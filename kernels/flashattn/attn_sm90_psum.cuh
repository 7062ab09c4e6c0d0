// v24's softmax: the row sums l taken from the packed fp16 P (the values the P.V product multiplies)
// by a pairwise f16x2 tree, at the top of the next step, instead of an fp32 add per score inside the
// softmax. What it does and why is in v24_packed_row_sums.cu. Include it after attn_sm90_kv176.cuh.
//
// Append-only: once a recorded version builds it, a helper here is never changed in place (`report
// same-code` proves that a version's kernel still compiles to the machine code its records ran).
#pragma once

#ifndef PSUM_AT
#define PSUM_AT 0  // where a step adds P_{j-1}'s sums in the source: 0 at its top (v24's first build), 1 once
                   // its products are issued, before the wait for S_j (v25). ptxas keeps v24's tree at the
                   // top, but moves v25's past that wait, into the softmax's max reduction (their SASS).
#endif

// softmax_tile without the row sums: the running max, alpha, l rescaled by alpha, and the scores
// turned into exp2 values in place. The sums of this tile's P are added into l later (add_p_sums).
template <int S>
__device__ __forceinline__ void softmax_tile_no_sums(float (&sc)[S], float& m0, float& m1, float& l0, float& l1,
                                                     float& alpha0, float& alpha1, float scale_log2)
{
    softmax_tile_with<false>(sc, m0, m1, l0, l1, alpha0, alpha1, scale_log2);
}

__device__ __forceinline__ u32 add_f16x2(u32 a, u32 b)
{
    u32 r;
    asm("add.rn.f16x2 %0, %1, %2;" : "=r"(r) : "r"(a), "r"(b));
    return r;
}

__device__ __forceinline__ float f16x2_sum_f32(u32 h)
{
    float lo, hi;
    asm("{ .reg .f16 a, b; mov.b32 {a, b}, %2; cvt.f32.f16 %0, a; cvt.f32.f16 %1, b; }" : "=f"(lo), "=f"(hi) : "r"(h));
    return lo + hi;
}

// l += this thread's share of the row sums of the packed P (pack_p's layout: p[2i] holds two
// scores of row r, p[2i + 1] two of row r + 8), by a pairwise f16x2 tree over each row's registers:
// the sums of the fp16 values the P.V product multiplies: each half of a row's f16x2 sums at most
// P_REGS / 2 scores, each at most 1.
template <int P>
__device__ __forceinline__ void add_p_sums(const u32 (&p)[P], float& l0, float& l1)
{
    u32 r0[P / 2], r1[P / 2];
#pragma unroll
    for (int i = 0; i < P / 2; ++i) {
        r0[i] = p[2 * i];
        r1[i] = p[2 * i + 1];
    }
#pragma unroll
    for (int w = 1; w < P / 2; w *= 2)
#pragma unroll
        for (int i = 0; i + w < P / 2; i += 2 * w) {
            r0[i] = add_f16x2(r0[i], r0[i + w]);
            r1[i] = add_f16x2(r1[i], r1[i + w]);
        }
    l0 += f16x2_sum_f32(r0[0]);
    l1 += f16x2_sum_f32(r1[0]);
}

// v15's step (attn_sm90_kv176.cuh's issue_step and finish_step) with the sums of P_{j-1} added into l
// where PSUM_AT says, and the softmax without sums.
template <int MASK>
__device__ __forceinline__ void consumer_step_psum(const int j, const StepCtx& c, float (&sc)[S_REGS], float (&o)[64],
                                                   u32 (&p)[P_REGS], float& m0, float& m1, float& l0, float& l1)
{
#if PSUM_AT == 0
    add_p_sums(p, l0, l1);    // P_{j-1}, relative to the max of step j - 1, before this step rescales l
#endif
    issue_step(j, c, sc, o, p);
#if PSUM_AT == 1
    add_p_sums(p, l0, l1);    // P_{j-1}, while S_j runs, before this step rescales l
#endif
    finish_step<MASK, false>(j, c, sc, o, p, m0, m1, l0, l1);
}
