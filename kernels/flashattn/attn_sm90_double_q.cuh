// v19's kernel, the persistent kernel with two Q buffers, whose epilogue is a hook (STORE_O): v19
// builds it with the default store, v20 and v21 with their own; its steps after a unit's first are a
// hook too (DQ_STEP: v15's consumer_step unless a version names another, as v32 does), and so is the
// producer's work after its loads (DQ_STORE_WARPS: none unless a version names it, as v35 does), and
// where the epilogue runs (DQ_DEFER_EPILOGUE: v37 moves it under the next unit's first S), and how Q
// arrives (DQ_INIT, DQ_PRODUCE and DQ_Q_BAR: v19's one tile on one barrier unless a version names its
// own, as v38 does with a barrier per consumer's half), and the consumers' walk over their units
// (DQ_CONSUME: v19's loop below unless a version names its own, as v39 does). What it does and why is
// in v19_double_q.cu.
// A version file defines its STORE_O (or none) and includes this header.
//
// Append-only: once a recorded version builds it, the kernel is never changed in place (`report
// same-code` proves that a version's kernel still compiles to the PTX its records ran).
#pragma once

#ifndef BLOCK_N
#define BLOCK_N 128
#endif

#ifndef Q_BUFFERS
#define Q_BUFFERS 2              // 1: v17's single Q buffer (with 176-row tiles the only one that fits)
#endif
#ifndef FIRST_LOADS_IN_ORDER
#define FIRST_LOADS_IN_ORDER 1   // 1: at the start, the K/V lane waits for the first K tile before the
                                 // rest of the ring, and the Q warp for each Q before the next one
#endif
#include "attn_sm90_units.cuh"

// tiles + v15's K/V barriers and the four Q barriers (full and empty per buffer)
#define V19_SMEM_BYTES UNITS_SMEM_BYTES
#if V19_SMEM_BYTES > 227 * 1024
#error "two Q buffers and this K/V ring do not fit in 227 KB: use BLOCK_N 128 with STAGES 2 (or Q_BUFFERS 1)"
#endif

// the epilogue's store of O / l by default: v15's store_o_pairs (f16x2 pairs from the accumulators, as v17)
#ifndef STORE_O
#define STORE_O store_o_pairs
#endif
// the step j = 1 .. n-1 of a unit by default: v15's consumer_step (v32: v31's, with the sum guard)
#ifndef DQ_STEP
#define DQ_STEP consumer_step
#endif
// the producer warpgroup's work after produce_units: none unless DQ_STORE_WARPS names a function (v35:
// its idle warps write the consumers' staged O blocks out)
// parameters after n_heads: none by default (v36: ", const __grid_constant__ TmaDesc tm_o", O's tensor map)
#ifndef DQ_EXTRA_PARAMS
#define DQ_EXTRA_PARAMS
#endif
// 1 (v37): a unit's epilogue runs in the next unit's step 0, after its first S is issued (the last unit's after
// the loop); 0: right after the unit's last P.V
#ifndef DQ_DEFER_EPILOGUE
#define DQ_DEFER_EPILOGUE 0
#endif
// a version's own consumer loop (DQ_CONSUME) waits on v19's Q barriers and stores at once: it does not read
// DQ_Q_BAR or DQ_DEFER_EPILOGUE
#if defined(DQ_CONSUME) && (defined(DQ_Q_BAR) || DQ_DEFER_EPILOGUE)
#error "DQ_CONSUME replaces the loop that DQ_Q_BAR and DQ_DEFER_EPILOGUE change: name one or the other"
#endif
// the barriers' set-up, the producer warpgroup's loads and the barrier consumer cw waits on for Q buffer b:
// v19's by default (v38: Q in two halves, one a consumer, each on its own barrier)
#ifndef DQ_INIT
#define DQ_INIT init_units
#endif
#ifndef DQ_PRODUCE
#define DQ_PRODUCE produce_units
#endif
#ifndef DQ_Q_BAR
#define DQ_Q_BAR(b) (bar_q + 8 * (b))
#endif

extern "C" __global__ void __launch_bounds__(THREADS, 1) CLUSTER_ATTR
attn_fwd_double_q(const __grid_constant__ TmaDesc tm_q, const __grid_constant__ TmaDesc tm_k,
                  const __grid_constant__ TmaDesc tm_v, u16* __restrict__ O, int seqlen, float scale_log2,
                  int n_heads DQ_EXTRA_PARAMS)
{
    extern __shared__ __align__(1024) unsigned char smem_raw[];
    TRACE_ENTRY();
    const UnitsSmem sm(smem_raw);
    const u32 sQ = sm.sQ, sK = sm.sK, sV = sm.sV;
    const u32 bar_full_k = sm.bar_full_k, bar_full_v = sm.bar_full_v, bar_empty_k = sm.bar_empty_k,
              bar_empty_v = sm.bar_empty_v, bar_q = sm.bar_q, bar_q_empty = sm.bar_q_empty;

    const auto [n_tiles, tail, units_per_head, n_units, rank, cluster_id, n_clusters] = units_of(seqlen, n_heads);

    DQ_INIT(sm);

    const int wg = __shfl_sync(0xffffffffu, (int)(threadIdx.x / 128), 0);

    if (wg == 2) {
        // ------------------------------------------------------------------- producer
        asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;" ::"n"(PRODUCER_REGS));
        DQ_PRODUCE(sm, &tm_q, &tm_k, &tm_v, n_tiles, units_per_head, n_units, cluster_id, n_clusters, rank);
#ifdef DQ_STORE_WARPS
        // v35: the producer's warps 2 and 3 write the consumers' staged O blocks out
        DQ_STORE_WARPS(O, seqlen, units_per_head, n_units, cluster_id, n_clusters, rank);
#endif
#if CLUSTER > 1
        cluster_sync_all();
#endif
        return;
    }

    // ----------------------------------------------------------------------- consumers
    asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;" ::"n"(CONSUMER_REGS));
    const int cw = wg;
    const int tid = threadIdx.x & 127;
    const int warp = tid >> 5, lane = tid & 31;
    const int row = cw * 64 + warp * 16 + (lane >> 2);
    const int col = 2 * (lane & 3);
    const u32 my_turn = TURN_BAR0 + cw, other_turn = TURN_BAR0 + 1 - cw;

    const u64 desc_k = make_desc(sK, K_LBO, K_SBO);
    const u64 desc_v = make_desc(sV, V_LBO, V_SBO);

    // consumer 0 takes the first turn: consumer 1's one arrive ahead of everything
    if (cw == 1 && cluster_id < n_units) turn_arrive(TURN_BAR0);

#ifdef DQ_CONSUME
    // v39: the consumers' walk over their units is the version's own (its unit boundary differs)
    DQ_CONSUME(sm, O, seqlen, scale_log2, n_heads, cw, tid, lane, row, col, my_turn, other_turn, desc_k, desc_v);
    (void)sQ, (void)bar_full_k, (void)bar_full_v, (void)bar_empty_k, (void)bar_empty_v, (void)bar_q, (void)bar_q_empty;
#else
    int g = 0;  // kv tiles consumed so far, all units: the ring's counter, as the K/V lane's
    int local = 0;
#if DQ_DEFER_EPILOGUE
    // O and the row sums live across units: the previous unit's until its epilogue in this unit's step 0
    float o[64];
    float l0 = 0.f, l1 = 0.f;
    int prev_head = 0, prev_q0 = 0;
    const auto store_previous = [&]() {
        sum_row_partials(l0, l1);
        STORE_O(o, 1.f / l0, 1.f / l1, O + ((u64)prev_head * (u64)seqlen + prev_q0 + row) * HEAD_DIM + col, lane);
        TRACE_UNIT(tid == 0, local - 1, cw == 0 ? TR_EPI_DONE : TR_EPI_DONE_1);
    };
#endif
    for (int w = cluster_id; w < n_units; w += n_clusters, ++local) {
        const bool last_unit = w + n_clusters >= n_units;
        const int head = w / units_per_head;
        const int q0 = ((w % units_per_head) * CLUSTER + (int)rank) * BLOCK_M;
        const int b = local % Q_BUFFERS;
        const u64 desc_q = make_desc(sQ + b * TILE_BYTES + cw * 64 * 128, K_LBO, K_SBO);
        const StepCtx ctx{bar_full_k, bar_full_v, bar_empty_k, bar_empty_v, desc_q, desc_k, desc_v, my_turn,
                          other_turn, lane, col, tail, n_tiles, scale_log2};

#if DQ_DEFER_EPILOGUE
        float m0 = __int_as_float(0xff800000), m1 = __int_as_float(0xff800000);
#else
        float o[64];
#pragma unroll
        for (int i = 0; i < 64; ++i) o[i] = 0.f;
        float m0 = __int_as_float(0xff800000), m1 = __int_as_float(0xff800000);
        float l0 = 0.f, l1 = 0.f;
#endif
        float sc[S_REGS];
        u32 p[P_REGS];

        mbar_wait(DQ_Q_BAR(b), (u32)(local / Q_BUFFERS) & 1u);
        proxy_fence_async();
        TRACE_UNIT(tid == 0, local, cw == 0 ? TR_Q_READY : TR_Q_READY_1);
        {
            // ---- step 0 of the unit: S_0 only (ring entry g)
            const int s = g % STAGES;
            mbar_wait(bar_full_k + 8 * s, (u32)(g / STAGES) & 1u);
            proxy_fence_async();
            TRACE_UNIT(tid == 0 && cw == 0, local, TR_K0_READY);
            turn_sync(my_turn);
            TRACE_UNIT(tid == 0 && cw == 0, local, TR_TURN0);
            wgmma_fence();
            issue_qk(sc, desc_q, desc_k + (u64)((s * KV_TILE_BYTES) >> 4));
            wgmma_commit();
            turn_arrive(other_turn);
#if DQ_DEFER_EPILOGUE
            // the previous unit's epilogue while this unit's first S is on the tensor cores
            if (local > 0) store_previous();
#pragma unroll
            for (int i = 0; i < 64; ++i) o[i] = 0.f;
            l0 = 0.f;
            l1 = 0.f;
#endif
            wgmma_wait<0>();
            fence_acc(sc);
            if (lane == 0) mbar_arrive_cluster(bar_empty_k + 8 * s);
            TRACE_UNIT(tid == 0, local, cw == 0 ? TR_S0_DONE : TR_S0_DONE_1);
            if (n_tiles == 1 && tail < BLOCK_N) mask_tail(sc, tail, col);
            float alpha0, alpha1;
            softmax_tile(sc, m0, m1, l0, l1, alpha0, alpha1, scale_log2);
            pack_p(sc, p, 1.f);
        }
        // steps 1 .. n-1, at ring entries g + 1 .. g + n - 1 (v15's step, given the ring index)
        for (int j = 1; j < n_tiles - 1; ++j) {
            TRACE_UNIT(tid == 0 && cw == 0 && j <= 8, local, TR_STEP1 + j - 1);
            DQ_STEP<0>(g + j, ctx, sc, o, p, m0, m1, l0, l1);
        }
        if (n_tiles > 1) {
            TRACE_UNIT(tid == 0 && cw == 0 && n_tiles <= 9, local, TR_STEP1 + n_tiles - 2);
            DQ_STEP<1>(g + n_tiles - 1, ctx, sc, o, p, m0, m1, l0, l1);
        }
        // ---- step n: O += P_{n-1} V_{n-1}; every S of the unit has landed, so its Q buffer is released
        if (lane == 0) mbar_arrive(bar_q_empty + 8 * b);
        consumer_last_step(g + n_tiles - 1, ctx, o, p, cw, last_unit);  // consumer 1's very last step: no arrive
        TRACE_UNIT(tid == 0, local, cw == 0 ? TR_LAST_PV : TR_LAST_PV_1);
        g += n_tiles;

#if DQ_DEFER_EPILOGUE
        prev_head = head;
        prev_q0 = q0;
    }
    if (local > 0) store_previous();  // the last unit's epilogue
#else
        // ---- epilogue: O / l in fp16 (the Q warp and the K/V lane are already loading ahead)
        sum_row_partials(l0, l1);
        STORE_O(o, 1.f / l0, 1.f / l1, O + ((u64)head * (u64)seqlen + q0 + row) * HEAD_DIM + col, lane);
        TRACE_UNIT(tid == 0, local, cw == 0 ? TR_EPI_DONE : TR_EPI_DONE_1);
    }
#endif
#endif  // DQ_CONSUME
#if CLUSTER > 1
    cluster_sync_all();
#endif
    TRACE_EXIT();
}
