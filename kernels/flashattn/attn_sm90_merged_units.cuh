// v39's consumer loop (v19's kernel's DQ_CONSUME): v19's walk over the units, with each boundary between two
// units run as v23's boundary step, on the kernel's own step (DQ_STEP) and epilogue (STORE_O). What it does
// and why is in v39_merged_boundary.cu.
//
// A consumer's first unit starts with v19's step 0 (S_0 alone). Every later unit's S_0 is issued in the
// previous unit's last turn, with that unit's last P.V (consumer_boundary_step): its softmax runs while the
// P.V is on the tensor cores, then the finished O is staged for the store warps (STORE_O) and the
// accumulators cleared. The last unit ends with v19's last step (the P.V alone; consumer 1 passes no turn on
// after it). Both consumers take one turn fewer a boundary, so their turns stay balanced.
//
// Trace stamps (trace.cuh): the slots of v19's loop, not all at the same points. A unit's Q_READY comes
// before the step that issues its S_0 and S0_DONE after it: for a unit after the first, that is the
// previous unit's boundary step, so both come before the previous unit's LAST_PV and EPI_DONE (stamped
// after the boundary step and after its epilogue), and S0_DONE includes the last P.V. K0_READY and TURN0
// are stamped for the first unit only. The step stamps are v19's, so the probe's steps and boundary
// (tools/trace_probe.py) compare with v19's kernels; its Q waits, first S, last step and unit do not.
//
// Include it after attn_sm90_double_q.cuh (UnitsSmem, units_of, StepCtx, DQ_STEP) and the STORE_O it names.
//
// Append-only: once a recorded version builds it, a helper here is never changed in place (`report
// same-code` proves that a version's kernel still compiles to the machine code its records ran).
#pragma once

#include "attn_sm90_boundary_step.cuh"
#include "attn_sm90_cta.cuh"

__device__ __forceinline__ void consume_units_merged(const UnitsSmem& sm, u16* __restrict__ O, int seqlen,
                                                     float scale_log2, int n_heads, int cw, int tid, int lane,
                                                     int row, int col, u32 my_turn, u32 other_turn, u64 desc_k,
                                                     u64 desc_v)
{
    const Units u = units_of(seqlen, n_heads);
    const int n_tiles = u.n_tiles, tail = u.tail, units_per_head = u.units_per_head, n_units = u.n_units;
    const int cluster_id = u.cluster_id, n_clusters = u.n_clusters;
    const u32 rank = u.rank;
    // the step context of a unit whose Q is in buffer b (this consumer's 64 rows of it)
    const auto ctx_of = [&](int b) {
        return StepCtx{sm.bar_full_k, sm.bar_full_v, sm.bar_empty_k, sm.bar_empty_v,
                       make_desc(sm.sQ + b * TILE_BYTES + cw * 64 * 128, K_LBO, K_SBO), desc_k, desc_v, my_turn,
                       other_turn, lane, col, tail, n_tiles, scale_log2};
    };

    float o[64], m0, m1, l0, l1;
    start_rows(o, m0, m1, l0, l1);
    float sc[S_REGS];
    u32 p[P_REGS];

    if (cluster_id < n_units) {
        // ---- step 0 of the first unit: S_0 only (ring entry 0), as v19's
        mbar_wait(sm.bar_q, 0u);
        proxy_fence_async();
        TRACE_UNIT(tid == 0, 0, cw == 0 ? TR_Q_READY : TR_Q_READY_1);
        mbar_wait(sm.bar_full_k, 0u);
        proxy_fence_async();
        TRACE_UNIT(tid == 0 && cw == 0, 0, TR_K0_READY);
        turn_sync(my_turn);
        TRACE_UNIT(tid == 0 && cw == 0, 0, TR_TURN0);
        wgmma_fence();
        issue_qk(sc, ctx_of(0).desc_q, desc_k);
        wgmma_commit();
        turn_arrive(other_turn);
        wgmma_wait<0>();
        fence_acc(sc);
        if (lane == 0) mbar_arrive_cluster(sm.bar_empty_k);
        TRACE_UNIT(tid == 0, 0, cw == 0 ? TR_S0_DONE : TR_S0_DONE_1);
        if (n_tiles == 1 && tail < BLOCK_N) mask_tail(sc, tail, col);
        float alpha0, alpha1;
        softmax_tile(sc, m0, m1, l0, l1, alpha0, alpha1, scale_log2);
        pack_p(sc, p, 1.f);
    }

    int g = 0;  // kv tiles consumed so far, all units: the ring's counter, as the K/V lane's
    int local = 0;
    for (int w = cluster_id; w < n_units; w += n_clusters, ++local) {
        const bool last_unit = w + n_clusters >= n_units;
        const int head = w / units_per_head;
        const int q0 = ((w % units_per_head) * CLUSTER + (int)rank) * BLOCK_M;
        const int b = local % Q_BUFFERS;
        const StepCtx ctx = ctx_of(b);

        // steps 1 .. n-1 at ring entries g + 1 .. g + n - 1 (step 0 ran before: above, or in the boundary step)
        for (int j = 1; j < n_tiles - 1; ++j) {
            TRACE_UNIT(tid == 0 && cw == 0 && j <= 8, local, TR_STEP1 + j - 1);
            DQ_STEP<0>(g + j, ctx, sc, o, p, m0, m1, l0, l1);
        }
        if (n_tiles > 1) {
            TRACE_UNIT(tid == 0 && cw == 0 && n_tiles <= 9, local, TR_STEP1 + n_tiles - 2);
            DQ_STEP<1>(g + n_tiles - 1, ctx, sc, o, p, m0, m1, l0, l1);
        }
        // every S of the unit has landed: its Q buffer is released
        if (lane == 0) mbar_arrive(sm.bar_q_empty + 8 * b);
        u16* out = O + ((u64)head * (u64)seqlen + q0 + row) * HEAD_DIM + col;
        if (!last_unit) {
            // ---- the boundary: the next unit's S_0 with this unit's last P.V, in one turn
            const int nb = (local + 1) % Q_BUFFERS;
            mbar_wait(sm.bar_q + 8 * nb, (u32)((local + 1) / Q_BUFFERS) & 1u);
            proxy_fence_async();
            TRACE_UNIT(tid == 0, local + 1, cw == 0 ? TR_Q_READY : TR_Q_READY_1);
            float done0, done1;
            consumer_boundary_step(g + n_tiles, ctx_of(nb), sc, o, p, m0, m1, l0, l1, done0, done1);
            TRACE_UNIT(tid == 0, local + 1, cw == 0 ? TR_S0_DONE : TR_S0_DONE_1);
            TRACE_UNIT(tid == 0, local, cw == 0 ? TR_LAST_PV : TR_LAST_PV_1);
            sum_row_partials(done0, done1);
            STORE_O(o, 1.f / done0, 1.f / done1, out, lane);
            zero_acc(o);
        } else {
            // ---- the last unit: O += P_{n-1} V_{n-1} alone (consumer 1: no arrive), then O
            consumer_last_step(g + n_tiles - 1, ctx, o, p, cw, true);
            TRACE_UNIT(tid == 0, local, cw == 0 ? TR_LAST_PV : TR_LAST_PV_1);
            sum_row_partials(l0, l1);
            STORE_O(o, 1.f / l0, 1.f / l1, out, lane);
        }
        TRACE_UNIT(tid == 0, local, cw == 0 ? TR_EPI_DONE : TR_EPI_DONE_1);
        g += n_tiles;
    }
}
