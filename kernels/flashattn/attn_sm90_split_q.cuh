// v26's kernel: v19's persistent kernel (attn_sm90_units.cuh: work units, the K/V ring and its lane,
// v15's steps) on v15's 176-row K/V tiles, with Q held per consumer warpgroup in three 16 KB slots
// instead of two 32 KB tiles. What it does and why is in v26_split_q.cu.
//
// Q pieces. A piece is one consumer warpgroup's 64 query rows of a unit (both 64-column halves, each
// 64 rows x 128 B, the second 8 KB after the first). Pieces are numbered in the order the consumers
// need them: piece k = 2 * local + cw (local: the unit's number among the CTA's, cw: the warpgroup),
// and piece k lives in slot k % 3, phase (k / 3) & 1 of that slot's full and empty barriers. The Q
// warp loads them in that order; before loading piece k >= 3 it waits until piece k - 3 left its slot
// (its warpgroup's four warps arrived on the slot's empty barrier once its last S had landed).
//
// Append-only: once a recorded version builds it, the kernel is never changed in place (`report
// same-code` proves that a version's kernel still compiles to the machine code its records ran).
#pragma once

#ifndef BLOCK_N
#define BLOCK_N 176
#endif
#ifndef FIRST_LOADS_IN_ORDER
#define FIRST_LOADS_IN_ORDER 1   // as v19: the first K tile, and each of the first pieces, before the next
#endif
#define Q_BUFFERS 1              // attn_sm90_units.cuh's own Q buffers are not used here (see SplitQSmem)
#include "attn_sm90_units.cuh"

#define Q_SLOTS 3
#define PIECE_HALF_BYTES (64 * 128)            // 64 rows x 128 B: one column half of a piece
#define PIECE_BYTES (2 * PIECE_HALF_BYTES)     // one warpgroup's 64 x 128 fp16 block of Q
// slack, three Q slots, the K/V ring, v15's ring barriers, a full and an empty barrier per slot
#define SPLIT_Q_SMEM_BYTES (1024 + Q_SLOTS * PIECE_BYTES + 2 * STAGES * KV_TILE_BYTES + 8 * (4 * STAGES + 2 * Q_SLOTS))
#if SPLIT_Q_SMEM_BYTES > 227 * 1024
#error "three Q slots and this K/V ring do not fit in 227 KB"
#endif

#ifndef STORE_O
#define STORE_O store_o_pairs
#endif

// The CTA's shared memory: three Q slots, then attn_sm90_units.cuh's ring and barriers in its own
// order, then a full and an empty barrier per slot (bar_q, bar_q_empty: + 8 * slot).
__device__ __forceinline__ UnitsSmem split_q_smem(const unsigned char* smem_raw)
{
    UnitsSmem sm(smem_raw);
    const u32 base = sm.sQ;
    sm.sK = base + Q_SLOTS * PIECE_BYTES;
    sm.sV = sm.sK + STAGES * KV_TILE_BYTES;
    const u32 bars = sm.sV + STAGES * KV_TILE_BYTES;
    sm.bar_full_k = bars;
    sm.bar_full_v = bars + 8 * STAGES;
    sm.bar_empty_k = bars + 8 * (2 * STAGES);
    sm.bar_empty_v = bars + 8 * (3 * STAGES);
    sm.bar_q = bars + 8 * (4 * STAGES);
    sm.bar_q_empty = sm.bar_q + 8 * Q_SLOTS;
    return sm;
}

// region key: the pieces, loaded by the Q warp into three slots
// The Q warp (producer warp 1): every piece of the CTA's units, in the order the consumers need them.
__device__ __forceinline__ void produce_pieces(const UnitsSmem& sm, const TmaDesc* tm_q, int units_per_head,
                                               int n_units, int cluster_id, int n_clusters, u32 rank)
{
    const bool leader = (threadIdx.x & 31) == 0;
    if (leader) prefetch_tensor_map(tm_q);
    int local = 0;
    for (int w = cluster_id; w < n_units; w += n_clusters, ++local) {
        const int head = w / units_per_head;
        const int q0 = ((w % units_per_head) * CLUSTER + (int)rank) * BLOCK_M;
#pragma unroll
        for (int cw = 0; cw < 2; ++cw) {
            const int k = 2 * local + cw, slot = k % Q_SLOTS;
            if (k >= Q_SLOTS) mbar_wait(sm.bar_q_empty + 8 * slot, (u32)(k / Q_SLOTS - 1) & 1u);
#if FIRST_LOADS_IN_ORDER
            else if (k >= 1) mbar_wait(sm.bar_q + 8 * (k - 1), 0u);
#endif
            if (leader) {
                const u32 dst = sm.sQ + slot * PIECE_BYTES, bar = sm.bar_q + 8 * slot;
                mbar_arrive_expect_tx(bar, PIECE_BYTES);
                tma_load_box_3d(dst, tm_q, 0, q0 + 64 * cw, head, bar);
                tma_load_box_3d(dst + PIECE_HALF_BYTES, tm_q, 64, q0 + 64 * cw, head, bar);
            }
        }
        TRACE_UNIT(leader, local, TR_Q_ISSUED);
    }
}
// endregion

template <int MASK>
__device__ __forceinline__ void consumer_step_piece(const int j, const StepCtx& c, float (&sc)[S_REGS], float (&o)[64],
                                                    u32 (&p)[P_REGS], float& m0, float& m1, float& l0, float& l1)
{
    issue_step<PIECE_HALF_BYTES>(j, c, sc, o, p);
    finish_step<MASK, true>(j, c, sc, o, p, m0, m1, l0, l1);
}

extern "C" __global__ void __launch_bounds__(THREADS, 1) CLUSTER_ATTR
attn_fwd_split_q(const __grid_constant__ TmaDesc tm_q, const __grid_constant__ TmaDesc tm_k,
                 const __grid_constant__ TmaDesc tm_v, u16* __restrict__ O, int seqlen, float scale_log2,
                 int n_heads)
{
    extern __shared__ __align__(1024) unsigned char smem_raw[];
    TRACE_ENTRY();
    const UnitsSmem sm = split_q_smem(smem_raw);
    const auto [n_tiles, tail, units_per_head, n_units, rank, cluster_id, n_clusters] = units_of(seqlen, n_heads);

    init_units<Q_SLOTS, 4>(sm);  // a slot is emptied by the 4 warps of the warpgroup whose piece it holds

    const int wg = __shfl_sync(0xffffffffu, (int)(threadIdx.x / 128), 0);

    if (wg == 2) {
        // ------------------------------------------------------------------- producer
        asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;" ::"n"(PRODUCER_REGS));
        const int pw = (threadIdx.x % 128) / 32;
        if (pw == 0)  // the K/V lane, as v19's
            produce_units(sm, &tm_q, &tm_k, &tm_v, n_tiles, units_per_head, n_units, cluster_id, n_clusters, rank);
        else if (pw == 1)
            produce_pieces(sm, &tm_q, units_per_head, n_units, cluster_id, n_clusters, rank);
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

    const u64 desc_k = make_desc(sm.sK, K_LBO, K_SBO);
    const u64 desc_v = make_desc(sm.sV, V_LBO, V_SBO);

    // consumer 0 takes the first turn: consumer 1's one arrive ahead of everything
    if (cw == 1 && cluster_id < n_units) turn_arrive(TURN_BAR0);

    int g = 0;  // kv tiles consumed so far, all units: the ring's counter, as the K/V lane's
    int local = 0;
    for (int w = cluster_id; w < n_units; w += n_clusters, ++local) {
        const bool last_unit = w + n_clusters >= n_units;
        const int head = w / units_per_head;
        const int q0 = ((w % units_per_head) * CLUSTER + (int)rank) * BLOCK_M;
        const int k = 2 * local + cw, slot = k % Q_SLOTS;
        const u64 desc_q = make_desc(sm.sQ + slot * PIECE_BYTES, K_LBO, K_SBO);
        const StepCtx ctx{sm.bar_full_k, sm.bar_full_v, sm.bar_empty_k, sm.bar_empty_v, desc_q, desc_k, desc_v,
                          my_turn, other_turn, lane, col, tail, n_tiles, scale_log2};

        float o[64];
#pragma unroll
        for (int i = 0; i < 64; ++i) o[i] = 0.f;
        float m0 = __int_as_float(0xff800000), m1 = __int_as_float(0xff800000);
        float l0 = 0.f, l1 = 0.f;
        float sc[S_REGS];
        u32 p[P_REGS];

        mbar_wait(sm.bar_q + 8 * slot, (u32)(k / Q_SLOTS) & 1u);
        proxy_fence_async();
        TRACE_UNIT(tid == 0, local, cw == 0 ? TR_Q_READY : TR_Q_READY_1);
        {
            // ---- step 0 of the unit: S_0 only (ring entry g)
            const int s = g % STAGES;
            mbar_wait(sm.bar_full_k + 8 * s, (u32)(g / STAGES) & 1u);
            proxy_fence_async();
            turn_sync(my_turn);
            wgmma_fence();
            issue_qk<S_REGS, PIECE_HALF_BYTES>(sc, desc_q, desc_k + (u64)((s * KV_TILE_BYTES) >> 4));
            wgmma_commit();
            turn_arrive(other_turn);
            wgmma_wait<0>();
            fence_acc(sc);
            if (lane == 0) mbar_arrive_cluster(sm.bar_empty_k + 8 * s);
            TRACE_UNIT(tid == 0, local, cw == 0 ? TR_S0_DONE : TR_S0_DONE_1);
            if (n_tiles == 1 && tail < BLOCK_N) mask_tail(sc, tail, col);
            float alpha0, alpha1;
            softmax_tile(sc, m0, m1, l0, l1, alpha0, alpha1, scale_log2);
            pack_p(sc, p, 1.f);
        }
        // steps 1 .. n-1, at ring entries g + 1 .. g + n - 1; only the last may hold a partial tile
        for (int j = 1; j < n_tiles - 1; ++j) consumer_step_piece<0>(g + j, ctx, sc, o, p, m0, m1, l0, l1);
        if (n_tiles > 1) consumer_step_piece<1>(g + n_tiles - 1, ctx, sc, o, p, m0, m1, l0, l1);
        // ---- step n: O += P_{n-1} V_{n-1}; every S of the unit has landed, so the piece leaves its slot
        if (lane == 0) mbar_arrive(sm.bar_q_empty + 8 * slot);
        consumer_last_step(g + n_tiles - 1, ctx, o, p, cw, last_unit);  // consumer 1's very last step: no arrive
        TRACE_UNIT(tid == 0, local, cw == 0 ? TR_LAST_PV : TR_LAST_PV_1);
        g += n_tiles;

        // ---- epilogue: O / l in fp16 (the Q warp and the K/V lane are already loading ahead)
        sum_row_partials(l0, l1);
        STORE_O(o, 1.f / l0, 1.f / l1, O + ((u64)head * (u64)seqlen + q0 + row) * HEAD_DIM + col, lane);
        TRACE_UNIT(tid == 0, local, cw == 0 ? TR_EPI_DONE : TR_EPI_DONE_1);
    }
#if CLUSTER > 1
    cluster_sync_all();
#endif
    TRACE_EXIT();
}
