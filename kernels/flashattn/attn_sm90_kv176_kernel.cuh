// v15's kernel (one CTA per 128-row Q tile, v15's 176-row K/V tiles multicast to a cluster of two,
// a producer lane, two consumer warpgroups taking turns), built by v15 (and v16 through it) as it
// is and by later versions with their own softmax and steps through three hooks. What it does
// and why is in v15_kv176_multicast.cu.
//
// Hooks, defined before this header is included (the defaults are v15's):
//   KV176_SOFTMAX_FIRST  the softmax of step 0 (softmax_tile)
//   KV176_STEP           the step template of steps 1 .. n-1 (consumer_step)
//   KV176_AFTER_LAST     a statement on (p, l0, l1) after the last P.V (nothing)
//   KV176_Q_BYTES        the bytes of Q's tile the producer arms its barrier with (TILE_BYTES)
//   KV176_LOAD_Q         the copy of Q's tile, (dst, map, row0, head, bar) (load_tile_own)
//   KV176_PRODUCE_K      the producer's K tile, produce_kv_tile's arguments (produce_kv_tile)
//   KV176_ISSUE_QK       step 0's S = Q K^T, (sc, desc_q, desc_k) (issue_qk)
//
// Append-only: once a recorded version builds it, the kernel is never changed in place (`report
// same-code` proves that a version's kernel still compiles to the machine code its records ran).
#pragma once

#ifndef KV176_SOFTMAX_FIRST
#define KV176_SOFTMAX_FIRST softmax_tile
#endif
#ifndef KV176_STEP
#define KV176_STEP consumer_step
#endif
#ifndef KV176_AFTER_LAST
#define KV176_AFTER_LAST(p, l0, l1)
#endif
#ifndef KV176_Q_BYTES
#define KV176_Q_BYTES TILE_BYTES
#endif
#ifndef KV176_LOAD_Q
#define KV176_LOAD_Q load_tile_own
#endif
#ifndef KV176_PRODUCE_K
#define KV176_PRODUCE_K produce_kv_tile
#endif
#ifndef KV176_ISSUE_QK
#define KV176_ISSUE_QK issue_qk
#endif

#include "attn_sm90_kv176.cuh"
#include "attn_sm90_cta.cuh"

extern "C" __global__ void __launch_bounds__(THREADS, 1) CLUSTER_ATTR
attn_fwd_kv176_multicast(const __grid_constant__ TmaDesc tm_q, const __grid_constant__ TmaDesc tm_k,
             const __grid_constant__ TmaDesc tm_v, u16* __restrict__ O, int seqlen, float scale_log2)
{
    extern __shared__ __align__(1024) unsigned char smem_raw[];
    const auto [sQ, sK, sV, bars] = smem_tiles(smem_raw, 1);  // Q | K x STAGES | V x STAGES | barriers
    const u32 bar_q = bars;
    const auto [bar_full_k, bar_full_v, bar_empty_k, bar_empty_v] = ring_bars(bars + 8);  // + 8 * s

    const int n_tiles = (seqlen + BLOCK_N - 1) / BLOCK_N;      // the last one may be partial
    const int tail = seqlen - (n_tiles - 1) * BLOCK_N;         // valid rows of the last kv tile
    const u64 head_row0 = (u64)blockIdx.y * (u64)seqlen;  // first row of this (batch, head)
    const int head = (int)blockIdx.y;
    const int q0 = blockIdx.x * BLOCK_M;

    if (threadIdx.x == 0) {
        mbar_init(bar_q, 1);  // full barriers: the producer's one arrive.expect_tx, then the bytes
        init_kv_ring(bar_full_k, bar_full_v, bar_empty_k, bar_empty_v);
        asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    }
    sync_after_barrier_init();  // the neighbour's copies and releases may target these barriers from now on

    const int wg = __shfl_sync(0xffffffffu, (int)(threadIdx.x / 128), 0);

    if (wg == 2) {
        // ------------------------------------------------------------------- producer: one lane issues TMA
        asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;" ::"n"(PRODUCER_REGS));
        if (threadIdx.x % 128 < 32) {  // warps 1-3 of the producer warpgroup only wait at the end
            const bool leader = (threadIdx.x & 31) == 0;
            const u32 rank = CLUSTER > 1 ? cluster_rank() : 0u;
            if (leader) {
                prefetch_tensor_map(&tm_q);
                prefetch_tensor_map(&tm_k);
                prefetch_tensor_map(&tm_v);
                mbar_arrive_expect_tx(bar_q, KV176_Q_BYTES);
                KV176_LOAD_Q(sQ, &tm_q, q0, head, bar_q);
            }
            for (int j = 0; j < n_tiles; ++j) {
                KV176_PRODUCE_K(j, j, sK, bar_full_k, bar_empty_k, &tm_k, head, rank, leader);
                produce_kv_tile(j, j, sV, bar_full_v, bar_empty_v, &tm_v, head, rank, leader);
            }
        }
        cluster_sync_before_exit();
        return;
    }

    // ----------------------------------------------------------------------- consumers
    asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;" ::"n"(CONSUMER_REGS));
    const int cw = wg;                     // consumer warpgroup 0/1 (warps 0-7): query rows 64*cw .. 64*cw+63
    const auto [tid, lane, row, col] = consumer_thread(cw);
    const u32 my_turn = TURN_BAR0 + cw, other_turn = TURN_BAR0 + 1 - cw;

    const u64 desc_q = make_desc(sQ + cw * 64 * 128, K_LBO, K_SBO);
    const u64 desc_k = make_desc(sK, K_LBO, K_SBO);
    const u64 desc_v = make_desc(sV, V_LBO, V_SBO);

    float o[64], m0, m1, l0, l1;
    start_rows(o, m0, m1, l0, l1);

    mbar_wait(bar_q, 0);
    proxy_fence_async();

    // consumer 0 takes the first turn: consumer 1's one arrive ahead of its loop (counting above)
    if (cw == 1) turn_arrive(TURN_BAR0);

    float sc[S_REGS];
    u32 p[P_REGS];
    {
        // ---- step 0: S_0 only
        mbar_wait(bar_full_k, 0);
        proxy_fence_async();
        turn_sync(my_turn);
        wgmma_fence();
        KV176_ISSUE_QK(sc, desc_q, desc_k);
        wgmma_commit();
        turn_arrive(other_turn);  // n >= 1, so step 0 is never consumer 1's last step
        wgmma_wait<0>();
        fence_acc(sc);
        if (lane == 0) mbar_arrive_cluster(bar_empty_k);
        if (n_tiles == 1 && tail < BLOCK_N) mask_tail(sc, tail, col);
        float alpha0, alpha1;
        KV176_SOFTMAX_FIRST(sc, m0, m1, l0, l1, alpha0, alpha1, scale_log2);  // O is still 0: no rescale
        pack_p(sc, p, 1.f);
    }
    // Steps 1 .. n-1. Only the last may hold a partial tile, so it is a separate instance of the
    // step (MASK 1) and the masking stays out of the loop. MASK_IN_LOOP 1 is v15's first build,
    // which tested for the last step inside the loop as v12 does: ptxas turned the test into
    // selects executed every step (an FSEL per score), and v15 at BLOCK_N 128 ran slower than
    // v14, the same geometry without them.
    const StepCtx ctx{bar_full_k, bar_full_v, bar_empty_k, bar_empty_v, desc_q, desc_k, desc_v, my_turn, other_turn,
                      lane, col, tail, n_tiles, scale_log2};
#if MASK_IN_LOOP
    for (int j = 1; j < n_tiles; ++j) KV176_STEP<2>(j, ctx, sc, o, p, m0, m1, l0, l1);
#else
    for (int j = 1; j < n_tiles - 1; ++j) KV176_STEP<0>(j, ctx, sc, o, p, m0, m1, l0, l1);
    if (n_tiles > 1) KV176_STEP<1>(n_tiles - 1, ctx, sc, o, p, m0, m1, l0, l1);
#endif
    // ---- step n: O += P_{n-1} V_{n-1} only; consumer 1's last step, no arrive (counting above)
    consumer_last_step(n_tiles - 1, ctx, o, p, cw, true);
    KV176_AFTER_LAST(p, l0, l1);

    // ---- epilogue: O / l, fp16, straight from registers
    sum_row_partials(l0, l1);
    store_o_pairs(o, 1.f / l0, 1.f / l1, O + (head_row0 + q0 + row) * HEAD_DIM + col, lane);
    cluster_sync_before_exit();  // the neighbour may still release slots on this CTA's barriers until here
}
