// v15's machinery, shared by the versions built on it (v15's grid, v17 and v18's persistent
// kernels, v19's double Q buffer): its configuration (176-row K/V tiles, a cluster of CTAS sharing
// them by TMA multicast, the K/V ring), the producer's helpers, the consumer's steps and the
// epilogue's store. What each does and why is in v15_kv176_multicast.cu, whose kernel is the first
// built on it; a version file includes this header and holds only its kernel.
//
// Append-only: a helper here, once a recorded version uses it, is never changed in place (`report
// same-code` proves that a version's kernels still compile to the PTX its records ran).
#pragma once

#ifndef CLUSTER
#define CLUSTER 2                // CTAs per cluster sharing K/V by multicast (1 or 2)
#endif
#ifndef RELEASE_CLUSTER
#define RELEASE_CLUSTER 0        // 1: remote releases with .release.cluster (v14's first build; see mbar_arrive_cluster)
#endif
#ifndef MASK_IN_LOOP
#define MASK_IN_LOOP 0           // 1: the partial-tile test inside the step loop (v15's first build; see the steps)
#endif
#if CLUSTER != 1 && CLUSTER != 2
#error "CLUSTER must be 1 or 2"
#endif
// v15's own defaults, ahead of the settings all the sm_90a kernels share (attn_sm90_config.cuh):
// 176-row K/V tiles, and no proxy fence (TMA fills the ring).
#ifndef BLOCK_N
#define BLOCK_N 176              // kv rows per tile: 176 (FA3's choice at D = 128) or 128 (v14's)
#endif
#ifndef PROXY_FENCE
#define PROXY_FENCE 0            // 1: v08's fence.proxy.async after each full-barrier wait (not needed with TMA)
#endif
#include "attn_sm90_config.cuh"
#define KV_CHUNKS (BLOCK_N / 16) // k16 steps of the P.V product

#include "common/sm90/ptx.cuh"
#include "common/sm90/mbarrier.cuh"
#include "common/sm90/tma.cuh"
#include "common/sm90/cluster.cuh"
#include "common/sm90/wgmma.cuh"
#include "common/sm90/wgmma_e4m3.cuh"
#include "attn_sm90.cuh"
#include "attn_sm90_cluster.cuh"

// --------------------------------------------------------------------------- this version's own helpers

// One BLOCK_N x 128 fp16 K/V tile (rows row0 .. row0 + BLOCK_N - 1 of head `head`) into a
// slot of every CTA of the cluster: CTA rank r copies the r-th 64-column half (both with
// CLUSTER 1), KV_HALF_BYTES apart in shared memory, completing on `bar`, which every CTA armed
// with the tile's KV_TILE_BYTES.
__device__ __forceinline__ void load_tile_shared(u32 dst, const TmaDesc* map, int row0, int head, u32 bar, u32 rank)
{
#if CLUSTER == 1
    tma_load_box_3d(dst, map, 0, row0, head, bar);
    tma_load_box_3d(dst + KV_HALF_BYTES, map, 64, row0, head, bar);
#else
    tma_load_box_multicast_3d(dst + rank * KV_HALF_BYTES, map, 64 * (int)rank, row0, head, bar, (unsigned short)0x3);
#endif
}

// Q: this CTA's own 128 x 128 tile, both halves.
__device__ __forceinline__ void load_tile_own(u32 dst, const TmaDesc* map, int row0, int head, u32 bar)
{
    tma_load_box_3d(dst, map, 0, row0, head, bar);
    tma_load_box_3d(dst + HALF_BYTES, map, 64, row0, head, bar);
}

// K or V tile j of head `head` (kv rows j * BLOCK_N ..) into ring entry `it` (slot it % STAGES;
// `ring`, `bar_full`, `bar_empty`: slot 0's tile and barriers). The empty barrier completes when
// the consumers of every CTA in the cluster released the slot: this producer's half goes to all
// of them. The whole warp waits; the leader lane arms the full barrier with the tile's bytes
// (zero-filled rows count too) and issues the copy.
__device__ __forceinline__ void produce_kv_tile(const int it, const int j, u32 ring, u32 bar_full, u32 bar_empty,
                                                const TmaDesc* map, int head, u32 rank, bool leader)
{
    const int s = it % STAGES;
    const u32 phase = (u32)(it / STAGES) & 1u;
    mbar_wait(bar_empty + 8 * s, phase ^ 1u);
    if (leader) {
        mbar_arrive_expect_tx(bar_full + 8 * s, KV_TILE_BYTES);
        load_tile_shared(ring + s * KV_TILE_BYTES, map, j * BLOCK_N, head, bar_full + 8 * s, rank);
    }
}

// The K/V ring's barriers: full ones count the producer's one arrive.expect_tx (then the bytes),
// empty ones every consumer warp of the cluster.
__device__ __forceinline__ void init_kv_ring(u32 bar_full_k, u32 bar_full_v, u32 bar_empty_k, u32 bar_empty_v)
{
#pragma unroll
    for (int s = 0; s < STAGES; ++s) {
        mbar_init(bar_full_k + 8 * s, 1);
        mbar_init(bar_full_v + 8 * s, 1);
        mbar_init(bar_empty_k + 8 * s, 8 * CLUSTER);
        mbar_init(bar_empty_v + 8 * s, 8 * CLUSTER);
    }
}

// --------------------------------------------------------------------------- kernel

// What a consumer step needs besides its accumulators: barrier addresses, descriptors, turns,
// its lane and columns, and the sequence's geometry.
struct StepCtx {
    u32 bar_full_k, bar_full_v, bar_empty_k, bar_empty_v;
    u64 desc_q, desc_k, desc_v;
    u32 my_turn, other_turn;
    int lane, col, tail, n_tiles;
    float scale_log2;
};

// S (64 x N fp32) = Q_wg (64 x 128 e4m3) . K_tile^T (N x 128 e4m3), v30's scores: both tiles are N or 128
// rows of 128 bytes in the 128-byte swizzle, one swizzle row per row, so the four k32 steps are +32 B on
// both start addresses (issue_qk's steps inside one 64-column half). The first ignores the old S.
template <int S>
__device__ __forceinline__ void issue_qk_e4m3(float (&sc)[S], u64 desc_q, u64 desc_k_stage)
{
    static_assert(S == 88, "e4m3 scores are written for 176-row kv tiles");
#pragma unroll
    for (int kk = 0; kk < 4; ++kk) {
        const u64 off = (u64)((kk * 32) >> 4);
        wgmma_m64n176k32_e4m3_ss(sc, desc_q + off, desc_k_stage + off, kk > 0 ? 1u : 0u);
    }
}

// The first half of a step at ring entry j: wait until K_j and V_{j-1} are in, take the turn, issue
// S_j = Q K_j^T and O += P_{j-1} V_{j-1} as two groups, pass the turn on. Shared by every step that
// pairs the two products (consumer_step here, v23's boundary step, v24's step; v26's, whose Q pieces put
// the two column halves Q_HALF bytes apart: issue_qk's; v30's, whose Q and K are e4m3: E4M3 issues
// issue_qk_e4m3 instead of issue_qk).
template <int Q_HALF = HALF_BYTES, bool E4M3 = false>
__device__ __forceinline__ void issue_step(const int j, const StepCtx& c, float (&sc)[S_REGS], float (&o)[64],
                                           u32 (&p)[P_REGS])
{
    const int s = j % STAGES, sp = (j - 1) % STAGES;
    const u32 phase = (u32)(j / STAGES) & 1u, phase_p = (u32)((j - 1) / STAGES) & 1u;
    mbar_wait(c.bar_full_k + 8 * s, phase);
    proxy_fence_async();
    mbar_wait(c.bar_full_v + 8 * sp, phase_p);
    proxy_fence_async();
    fence_acc(o);
    fence_frag(p);
    fence_acc(sc);
    turn_sync(c.my_turn);
    wgmma_fence();
    if constexpr (E4M3)
        issue_qk_e4m3(sc, c.desc_q, c.desc_k + (u64)((s * KV_TILE_BYTES) >> 4));         // group: S_j
    else
        issue_qk<S_REGS, Q_HALF>(sc, c.desc_q, c.desc_k + (u64)((s * KV_TILE_BYTES) >> 4));   // group: S_j
    wgmma_commit();
    issue_pv(o, p, c.desc_v + (u64)((sp * KV_TILE_BYTES) >> 4));        // group: O += P_{j-1} V_{j-1}
    wgmma_commit();
    turn_arrive(c.other_turn);  // j < n: not the last step
}

// The second half of a step at ring entry j, once issue_step has issued it: wait for S_j, release
// K_j, mask the partial last tile as MASK says, the softmax (with the row sums when SUMS; without,
// for v24's step, which adds them from the packed P), wait for the P.V, release V_{j-1}, rescale O
// and pack P_j.
// Its parts around the softmax, shared with the steps whose softmax differs (v27's, v28's): await_scores
// waits for S_j, releases K_j and masks; await_pv waits for the P.V and releases V_{j-1}.
template <int MASK>
__device__ __forceinline__ void await_scores(const int j, const StepCtx& c, float (&sc)[S_REGS])
{
    wgmma_wait<1>();          // S_j complete, P.V may still run
    fence_acc(sc);
    if (c.lane == 0) mbar_arrive_cluster(c.bar_empty_k + 8 * (j % STAGES));
    if constexpr (MASK == 1) {
        if (c.tail < BLOCK_N) mask_tail(sc, c.tail, c.col);  // the partial last tile only
    } else if constexpr (MASK == 2) {
        if (j == c.n_tiles - 1 && c.tail < BLOCK_N) mask_tail(sc, c.tail, c.col);
    }
}

__device__ __forceinline__ void await_pv(const int j, const StepCtx& c, float (&o)[64], u32 (&p)[P_REGS])
{
    wgmma_wait<0>();          // P_{j-1} V_{j-1} landed: O and P are ours again
    fence_acc(o);
    fence_frag(p);
    if (c.lane == 0) mbar_arrive_cluster(c.bar_empty_v + 8 * ((j - 1) % STAGES));
}

template <int MASK, bool SUMS>
__device__ __forceinline__ void finish_step(const int j, const StepCtx& c, float (&sc)[S_REGS], float (&o)[64],
                                            u32 (&p)[P_REGS], float& m0, float& m1, float& l0, float& l1)
{
    await_scores<MASK>(j, c, sc);
    float alpha0, alpha1;
    softmax_tile_with<SUMS>(sc, m0, m1, l0, l1, alpha0, alpha1, c.scale_log2);
    await_pv(j, c, o, p);
    rescale_o(o, alpha0, alpha1);
    pack_p(sc, p, 1.f);
}

// Step j = 1 .. n-1 of a consumer (see v08 for the schedule). MASK says how it treats the
// partial last tile: 0 never masks, 1 masks (it is the last step), 2 tests at run time whether
// it is the last step (v15's first build, MASK_IN_LOOP 1: inside the loop ptxas turned that
// test into selects executed on every step, an FSEL per score).
template <int MASK>
__device__ __forceinline__ void consumer_step(const int j, const StepCtx& c, float (&sc)[S_REGS], float (&o)[64],
                                              u32 (&p)[P_REGS], float& m0, float& m1, float& l0, float& l1)
{
    // ---- step j: S_j and O += P_{j-1} V_{j-1} in one turn
    issue_step(j, c, sc, o, p);
    finish_step<MASK, true>(j, c, sc, o, p, m0, m1, l0, l1);
}

// Step n of a consumer (warpgroup cw): O += P_{n-1} V_{n-1} only, the last kv tile being ring
// entry `it`. The other consumer's turn is passed on, except on consumer 1's last step of its
// last unit (the turn counting of v08: consumer 1 arrives once fewer than it syncs).
__device__ __forceinline__ void consumer_last_step(const int it, const StepCtx& c, float (&o)[64], u32 (&p)[P_REGS],
                                                   const int cw, const bool last_unit)
{
    const int sp = it % STAGES;
    mbar_wait(c.bar_full_v + 8 * sp, (u32)(it / STAGES) & 1u);
    proxy_fence_async();
    fence_acc(o);
    fence_frag(p);
    turn_sync(c.my_turn);
    wgmma_fence();
    issue_pv(o, p, c.desc_v + (u64)((sp * KV_TILE_BYTES) >> 4));
    wgmma_commit();
    if (cw == 0 || !last_unit) turn_arrive(c.other_turn);
    wgmma_wait<0>();
    fence_acc(o);
    fence_frag(p);
    if (c.lane == 0) mbar_arrive_cluster(c.bar_empty_v + 8 * sp);
}

#if CLUSTER > 1
#define CLUSTER_ATTR __cluster_dims__(CLUSTER, 1, 1)
#else
#define CLUSTER_ATTR
#endif
