// v23's kernel: v19's persistent kernel with two Q buffers (attn_sm90_units.cuh: the same layout,
// barriers, producer warpgroup and work units), whose consumers run the boundary between two units
// as one ordinary step. What it does and why is in v23_unit_overlap.cu. The epilogue is the STORE_O
// hook, as in v19 (v23 builds it with v21's staged store).
//
// v19's consumer spends two turns at a boundary: one for the last P.V of unit u alone, then the
// epilogue, then one for the first S of unit u + 1 alone, then its softmax. Here one step issues
// both, S_0 of u + 1 (its Q is already in the other buffer, K_0 is the ring's next entry) and the
// last P.V of u, in one turn, exactly as a step inside a unit issues S_j with P_{j-1} V_{j-1}: while
// S_0 runs its softmax starts the new unit's row statistics; once the P.V has landed, O of u is
// complete and stored, and the accumulators are cleared for u + 1. Both consumers take one turn
// fewer a boundary, so the turns stay balanced; the last unit ends with v19's last step.
//
// Append-only: once a recorded version builds it, the kernel is never changed in place (`report
// same-code` proves that a version's kernel still compiles to the machine code its records ran).
#pragma once

#ifndef BLOCK_N
#define BLOCK_N 128
#endif
#ifndef Q_BUFFERS
#define Q_BUFFERS 2
#endif
#ifndef FIRST_LOADS_IN_ORDER
#define FIRST_LOADS_IN_ORDER 1   // as v19 (attn_sm90_units.cuh's producer)
#endif
#include "attn_sm90_units.cuh"
#include "attn_sm90_cta.cuh"
#include "attn_sm90_boundary_step.cuh"

#if Q_BUFFERS < 2
#error "the boundary step issues the next unit's first S while this unit's last P.V runs: it needs two Q buffers"
#endif
#if UNITS_SMEM_BYTES > 227 * 1024
#error "two Q buffers and this K/V ring do not fit in 227 KB: use BLOCK_N 128 with STAGES 2"
#endif

#ifndef STORE_O
#define STORE_O store_o_pairs
#endif

extern "C" __global__ void __launch_bounds__(THREADS, 1) CLUSTER_ATTR
attn_fwd_unit_overlap(const __grid_constant__ TmaDesc tm_q, const __grid_constant__ TmaDesc tm_k,
                      const __grid_constant__ TmaDesc tm_v, u16* __restrict__ O, int seqlen, float scale_log2,
                      int n_heads)
{
    extern __shared__ __align__(1024) unsigned char smem_raw[];
    const UnitsSmem sm(smem_raw);

    const auto [n_tiles, tail, units_per_head, n_units, rank, cluster_id, n_clusters] = units_of(seqlen, n_heads);

    init_units(sm);

    const int wg = __shfl_sync(0xffffffffu, (int)(threadIdx.x / 128), 0);

    if (wg == 2) {
        asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;" ::"n"(PRODUCER_REGS));
        produce_units(sm, &tm_q, &tm_k, &tm_v, n_tiles, units_per_head, n_units, cluster_id, n_clusters, rank);
#if CLUSTER > 1
        cluster_sync_all();
#endif
        return;
    }

    // ----------------------------------------------------------------------- consumers
    asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;" ::"n"(CONSUMER_REGS));
    const int cw = wg;
    const auto [tid, lane, row, col] = consumer_thread(cw);
    const u32 my_turn = TURN_BAR0 + cw, other_turn = TURN_BAR0 + 1 - cw;

    const u64 desc_k = make_desc(sm.sK, K_LBO, K_SBO);
    const u64 desc_v = make_desc(sm.sV, V_LBO, V_SBO);
    // the descriptor of this consumer's 64 rows of Q in buffer b
    auto q_desc = [&](int b) { return make_desc(sm.sQ + b * TILE_BYTES + cw * 64 * 128, K_LBO, K_SBO); };

    // consumer 0 takes the first turn: consumer 1's one arrive ahead of everything
    if (cw == 1 && cluster_id < n_units) turn_arrive(TURN_BAR0);

    float o[64], m0, m1, l0, l1;
    start_rows(o, m0, m1, l0, l1);
    float sc[S_REGS];
    u32 p[P_REGS];

    if (cluster_id < n_units) {
        // ---- step 0 of the cluster's first unit: S_0 only (ring entry 0), as v19's
        mbar_wait(sm.bar_q, 0u);
        proxy_fence_async();
        mbar_wait(sm.bar_full_k, 0u);
        proxy_fence_async();
        turn_sync(my_turn);
        wgmma_fence();
        issue_qk(sc, q_desc(0), desc_k);
        wgmma_commit();
        turn_arrive(other_turn);
        wgmma_wait<0>();
        fence_acc(sc);
        if (lane == 0) mbar_arrive_cluster(sm.bar_empty_k);
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
        const StepCtx ctx{sm.bar_full_k, sm.bar_full_v, sm.bar_empty_k, sm.bar_empty_v, q_desc(b), desc_k, desc_v,
                          my_turn, other_turn, lane, col, tail, n_tiles, scale_log2};

        // steps 1 .. n-1 at ring entries g + 1 .. g + n - 1 (v15's step; step 0 ran before)
        for (int j = 1; j < n_tiles - 1; ++j) consumer_step<0>(g + j, ctx, sc, o, p, m0, m1, l0, l1);
        if (n_tiles > 1) consumer_step<1>(g + n_tiles - 1, ctx, sc, o, p, m0, m1, l0, l1);
        // every S of the unit has landed: its Q buffer is released
        if (lane == 0) mbar_arrive(sm.bar_q_empty + 8 * b);
        u16* out = O + ((u64)head * (u64)seqlen + q0 + row) * HEAD_DIM + col;
        if (!last_unit) {
            // ---- the boundary: the next unit's S_0 with this unit's last P.V, in one turn
            const int nb = (local + 1) % Q_BUFFERS;
            mbar_wait(sm.bar_q + 8 * nb, (u32)((local + 1) / Q_BUFFERS) & 1u);
            proxy_fence_async();
            const StepCtx next{sm.bar_full_k, sm.bar_full_v, sm.bar_empty_k, sm.bar_empty_v, q_desc(nb), desc_k,
                               desc_v, my_turn, other_turn, lane, col, tail, n_tiles, scale_log2};
            float done0, done1;
            consumer_boundary_step(g + n_tiles, next, sc, o, p, m0, m1, l0, l1, done0, done1);
            sum_row_partials(done0, done1);
            STORE_O(o, 1.f / done0, 1.f / done1, out, lane);
            zero_acc(o);
        } else {
            // ---- the cluster's last unit: O += P_{n-1} V_{n-1} alone (consumer 1: no arrive), then O
            consumer_last_step(g + n_tiles - 1, ctx, o, p, cw, true);
            sum_row_partials(l0, l1);
            STORE_O(o, 1.f / l0, 1.f / l1, out, lane);
        }
        g += n_tiles;
    }
#if CLUSTER > 1
    cluster_sync_all();
#endif
}
