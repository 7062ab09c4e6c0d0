// v17's persistent kernel over v15's steps (attn_sm90_kv176.cuh), shared by v17 and v18: one
// cluster per pair of SMs stays resident and loops over work units, the producer lane loading the
// next unit's Q and K/V while the consumers finish the current one. What it does and why, and the
// counting across units, are in v17_persistent.cu; the trace marks (TRACE 1, trace.cuh) are v18's.
//
// Hooks, defined by the version file before it includes this header:
//   PERSIST_KERNEL  the kernel's name (required);
//   PREFETCH        1: a second producer warp prefetches the next unit's inputs into L2 with the
//                   version's prefetch_next_units (v18); 0 (default): that warp is idle (v17).
#pragma once

#include "attn_sm90_kv176.cuh"
#include "common/sm90/tma.cuh"
#include "trace.cuh"

#ifndef PERSIST_KERNEL
#error "flashattn/attn_sm90_persistent.cuh: define PERSIST_KERNEL (the kernel's name) before including it"
#endif
#ifndef PREFETCH
#define PREFETCH 0
#endif

#if PREFETCH
__device__ __forceinline__ void prefetch_next_units(const TmaDesc* tm_q, const TmaDesc* tm_k, const TmaDesc* tm_v,
                                                    u32 bar_q, int cluster_id, int n_clusters, int n_units,
                                                    int units_per_head, u32 rank, int n_tiles);
#endif

extern "C" __global__ void __launch_bounds__(THREADS, 1) CLUSTER_ATTR
PERSIST_KERNEL(const __grid_constant__ TmaDesc tm_q, const __grid_constant__ TmaDesc tm_k,
                    const __grid_constant__ TmaDesc tm_v, u16* __restrict__ O, int seqlen, float scale_log2,
                    int n_heads)
{
    extern __shared__ __align__(1024) unsigned char smem_raw[];
    TRACE_ENTRY();
    const u32 base = (smem_u32(smem_raw) + 1023u) & ~1023u;
    const u32 sQ = base;
    const u32 sK = base + TILE_BYTES;
    const u32 sV = sK + STAGES * KV_TILE_BYTES;
    const u32 bars = sV + STAGES * KV_TILE_BYTES;
    // v15's barrier block, with the Q empty barrier in the slot that follows it (SMEM_BYTES has
    // room: the host adds 8 bytes)
    const u32 bar_q = bars;
    const u32 bar_full_k = bars + 8;
    const u32 bar_full_v = bars + 8 * (1 + STAGES);
    const u32 bar_empty_k = bars + 8 * (1 + 2 * STAGES);
    const u32 bar_empty_v = bars + 8 * (1 + 3 * STAGES);
    const u32 bar_q_empty = bars + 8 * NUM_BARRIERS;

    const int n_tiles = (seqlen + BLOCK_N - 1) / BLOCK_N;
    const int tail = seqlen - (n_tiles - 1) * BLOCK_N;
    const int blocks_per_head = seqlen / BLOCK_M;
    const int units_per_head = blocks_per_head / CLUSTER;
    const int n_units = units_per_head * n_heads;
    const u32 rank = CLUSTER > 1 ? cluster_rank() : 0u;
    const int cluster_id = (int)blockIdx.x / CLUSTER;
    const int n_clusters = (int)gridDim.x / CLUSTER;

    if (threadIdx.x == 0) {
        mbar_init(bar_q, 1);
        mbar_init(bar_q_empty, 8);  // the 8 consumer warps of this CTA
        init_kv_ring(bar_full_k, bar_full_v, bar_empty_k, bar_empty_v);
        asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    }
#if CLUSTER > 1
    cluster_sync_all();
#else
    __syncthreads();
#endif

    const int wg = __shfl_sync(0xffffffffu, (int)(threadIdx.x / 128), 0);

    if (wg == 2) {
        // ------------------------------------------------------------------- producer
        asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;" ::"n"(PRODUCER_REGS));
        if (threadIdx.x % 128 < 32) {
            const bool leader = (threadIdx.x & 31) == 0;
            if (leader) {
                prefetch_tensor_map(&tm_q);
                prefetch_tensor_map(&tm_k);
                prefetch_tensor_map(&tm_v);
            }
            int g = 0;  // kv tiles loaded so far, all units
            int local = 0;
            for (int w = cluster_id; w < n_units; w += n_clusters, ++local) {
                const int head = w / units_per_head;
                const int q0 = ((w % units_per_head) * CLUSTER + (int)rank) * BLOCK_M;
                if (local > 0) mbar_wait(bar_q_empty, (u32)(local - 1) & 1u);  // the last S of the unit before
                if (leader) {
                    mbar_arrive_expect_tx(bar_q, TILE_BYTES);
                    load_tile_own(sQ, &tm_q, q0, head, bar_q);
                }
                TRACE_UNIT(leader, local, TR_Q_ISSUED);
                for (int j = 0; j < n_tiles; ++j, ++g) {
                    produce_kv_tile(g, j, sK, bar_full_k, bar_empty_k, &tm_k, head, rank, leader);
                    produce_kv_tile(g, j, sV, bar_full_v, bar_empty_v, &tm_v, head, rank, leader);
                }
            }
        }
#if PREFETCH
        else if (threadIdx.x % 128 < 64) {
            // the prefetch warp (v18): the next unit's inputs into L2 while this one runs
            prefetch_next_units(&tm_q, &tm_k, &tm_v, bar_q, cluster_id, n_clusters, n_units, units_per_head, rank, n_tiles);
        }
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

    const u64 desc_q = make_desc(sQ + cw * 64 * 128, K_LBO, K_SBO);
    const u64 desc_k = make_desc(sK, K_LBO, K_SBO);
    const u64 desc_v = make_desc(sV, V_LBO, V_SBO);
    const StepCtx ctx{bar_full_k, bar_full_v, bar_empty_k, bar_empty_v, desc_q, desc_k, desc_v, my_turn, other_turn,
                      lane, col, tail, n_tiles, scale_log2};

    // consumer 0 takes the first turn: consumer 1's one arrive ahead of everything
    if (cw == 1 && cluster_id < n_units) turn_arrive(TURN_BAR0);

    int g = 0;  // kv tiles consumed so far, all units: the ring's counter, as the producer's
    int local = 0;
    for (int w = cluster_id; w < n_units; w += n_clusters, ++local) {
        const bool last_unit = w + n_clusters >= n_units;
        const int head = w / units_per_head;
        const int q0 = ((w % units_per_head) * CLUSTER + (int)rank) * BLOCK_M;

        float o[64];
#pragma unroll
        for (int i = 0; i < 64; ++i) o[i] = 0.f;
        float m0 = __int_as_float(0xff800000), m1 = __int_as_float(0xff800000);
        float l0 = 0.f, l1 = 0.f;
        float sc[S_REGS];
        u32 p[P_REGS];

        mbar_wait(bar_q, (u32)local & 1u);
        proxy_fence_async();
        TRACE_UNIT(tid == 0, local, cw == 0 ? TR_Q_READY : TR_Q_READY_1);
        {
            // ---- step 0 of the unit: S_0 only (ring entry g)
            const int s = g % STAGES;
            mbar_wait(bar_full_k + 8 * s, (u32)(g / STAGES) & 1u);
            proxy_fence_async();
            turn_sync(my_turn);
            wgmma_fence();
            issue_qk(sc, desc_q, desc_k + (u64)((s * KV_TILE_BYTES) >> 4));
            wgmma_commit();
            turn_arrive(other_turn);
            wgmma_wait<0>();
            fence_acc(sc);
            if (lane == 0) mbar_arrive_cluster(bar_empty_k + 8 * s);
            if (n_tiles == 1 && tail < BLOCK_N) mask_tail(sc, tail, col);
            float alpha0, alpha1;
            TRACE_UNIT(tid == 0 && cw == 0, local, TR_S0_DONE);
            softmax_tile(sc, m0, m1, l0, l1, alpha0, alpha1, scale_log2);
            pack_p(sc, p, 1.f);
        }
        // steps 1 .. n-1, at ring entries g + 1 .. g + n - 1 (v15's step, given the ring index)
        for (int j = 1; j < n_tiles - 1; ++j) {
            TRACE_UNIT(tid == 0 && cw == 0 && j <= 8, local, TR_STEP1 + j - 1);
            consumer_step<0>(g + j, ctx, sc, o, p, m0, m1, l0, l1);
        }
        if (n_tiles > 1) {
            TRACE_UNIT(tid == 0 && cw == 0 && n_tiles <= 9, local, TR_STEP1 + n_tiles - 2);
            consumer_step<1>(g + n_tiles - 1, ctx, sc, o, p, m0, m1, l0, l1);
        }
        // ---- step n: O += P_{n-1} V_{n-1}; every S of the unit has landed, so Q is released first
        if (lane == 0) mbar_arrive(bar_q_empty);
        consumer_last_step(g + n_tiles - 1, ctx, o, p, cw, last_unit);  // consumer 1's very last step: no arrive
        TRACE_UNIT(tid == 0 && cw == 0, local, TR_LAST_PV);
        g += n_tiles;

        // ---- epilogue: O / l, fp16, straight from registers (the producer is already loading the next unit)
        sum_row_partials(l0, l1);
        store_o_pairs(o, 1.f / l0, 1.f / l1, O + ((u64)head * (u64)seqlen + q0 + row) * HEAD_DIM + col, lane);
        TRACE_UNIT(tid == 0, local, cw == 0 ? TR_EPI_DONE : TR_EPI_DONE_1);
    }
#if CLUSTER > 1
    cluster_sync_all();
#endif
    TRACE_EXIT();
}
