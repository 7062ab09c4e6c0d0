// v23's boundary step (consumer_boundary_step): the next unit's first S and this unit's last P.V in one
// turn, shared by the kernels that run a unit boundary that way (v23's attn_sm90_unit_overlap.cuh, v39's
// attn_sm90_merged_units.cuh). Reads v15's step helpers (attn_sm90_kv176.cuh: issue_step, softmax_tile,
// pack_p) and BLOCK_N, STAGES.
//
// Append-only: once a recorded version builds it, a helper here is never changed in place (`report
// same-code` proves that a version's kernel still compiles to the machine code its records ran).
#pragma once

#include "attn_sm90_kv176.cuh"

// The boundary step of a consumer: S_0 of the next unit (c.desc_q is the next unit's Q, ring entry
// j its K_0) and O += P_{n-1} V_{n-1} of this one (ring entry j - 1) in one turn. Returns this
// unit's row sums in done0 / done1 with O complete (the caller stores it and clears o), and leaves
// m, l and p as step 0 of the next unit leaves them.
__device__ __forceinline__ void consumer_boundary_step(const int j, const StepCtx& c, float (&sc)[S_REGS],
                                                       float (&o)[64], u32 (&p)[P_REGS], float& m0, float& m1,
                                                       float& l0, float& l1, float& done0, float& done1)
{
    issue_step(j, c, sc, o, p);  // the next unit's S_0 (c.desc_q is its Q) and this unit's last P V
    const int s = j % STAGES, sp = (j - 1) % STAGES;
    wgmma_wait<1>();          // S_0 complete, P.V may still run
    fence_acc(sc);
    if (c.lane == 0) mbar_arrive_cluster(c.bar_empty_k + 8 * s);
    if (c.n_tiles == 1 && c.tail < BLOCK_N) mask_tail(sc, c.tail, c.col);
    // this unit's sums are final; the next one's statistics start from nothing (alpha = ex2(-inf) = 0)
    done0 = l0;
    done1 = l1;
    m0 = m1 = __int_as_float(0xff800000);
    l0 = l1 = 0.f;
    float alpha0, alpha1;
    softmax_tile(sc, m0, m1, l0, l1, alpha0, alpha1, c.scale_log2);
    wgmma_wait<0>();          // the last P.V landed: O is complete, and P is ours again
    fence_acc(o);
    fence_frag(p);
    if (c.lane == 0) mbar_arrive_cluster(c.bar_empty_v + 8 * sp);
    pack_p(sc, p, 1.f);
}
