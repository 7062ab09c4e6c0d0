// v08's kernel, the one v08, v10, v11, v12, v13 and v14 share: a producer warpgroup filling a
// STAGES-deep K/V ring, two consumer warpgroups taking turns on named barriers, each overlapping
// the softmax of S_j with its own O += P_{j-1} V_{j-1}. What the schedule is and why, and the
// barrier counting, are in v08_overlap.cu; the layout and PTX facts in v06_wgmma.cu.
//
// A version file sets its configuration (attn_sm90_config.cuh), defines the hooks below that it
// changes, and includes this header; what it defines is its idea.
//
//   OVL_KERNEL         the kernel's name (required);
//   OVL_INPUTS         its parameters before O (default: the Q, K, V pointers of a cp.async producer);
//   OVL_KERNEL_ATTR    attributes after __launch_bounds__ (default none; v14: __cluster_dims__);
//   OVL_PRODUCER()     the producer warpgroup's work, a statement in the kernel's scope (default:
//                      produce_cp_async, v06's copies; v13's TMA lane is in attn_sm90_tma_producer.cuh,
//                      OVL_RING passes it the ring); the kernel returns after it;
//   FULL_ARRIVALS      arrivals that fill a full barrier (default PRODUCER_THREADS, one noinc
//                      arrive of each copying thread; 1 with TMA's arrive.expect_tx);
//   EMPTY_ARRIVALS     arrivals that empty a slot (default 8, the consumer warps; v14: of the cluster);
//   OVL_AFTER_INIT()   the CTA-wide sync after the barriers' init (default __syncthreads());
//   OVL_RELEASE(bar)   a consumer warp's release of a K/V slot (default mbar_arrive);
//   RESCALE_O(o, a0, a1)  O *= alpha after P V landed (default rescale_o; v10 skips it where alpha is 1);
//   OVL_CONSUMER_EXIT()   after the epilogue (default nothing; v14 waits for its cluster);
//   Q_IN_SMEM          0: no Q tile; the version defines load_q_frags and issue_qk_qregs (v11);
//   KV_TAIL            1: the last kv tile may be partial (rows past the end zero-filled by the
//                      version's load_kv_tile, scores masked); 0: seqlen is a multiple of BLOCK_N.
#pragma once

#include "attn_sm90_config.cuh"
#include "common/sm90/ptx.cuh"
#include "common/sm90/mbarrier.cuh"
#include "common/sm90/cp_async.cuh"
#include "common/sm90/wgmma.cuh"
#include "attn_sm90.cuh"

#ifndef OVL_KERNEL
#error "flashattn/attn_sm90_overlap.cuh: define OVL_KERNEL (the kernel's name) before including it"
#endif
#ifndef OVL_INPUTS
#define OVL_INPUTS const u16* __restrict__ Q, const u16* __restrict__ K, const u16* __restrict__ V
#endif
#ifndef OVL_KERNEL_ATTR
#define OVL_KERNEL_ATTR
#endif
#ifndef OVL_PRODUCER
#define OVL_PRODUCER() produce_cp_async(Q, K, V, sQ, sK, sV, bar_q, bar_full_k, bar_full_v, bar_empty_k, bar_empty_v, \
                                        head_row0, q0, n_tiles, seqlen)
#endif
#ifndef FULL_ARRIVALS
#define FULL_ARRIVALS PRODUCER_THREADS
#endif
#ifndef EMPTY_ARRIVALS
#define EMPTY_ARRIVALS 8
#endif
#ifndef OVL_AFTER_INIT
#define OVL_AFTER_INIT() __syncthreads()
#endif
#ifndef OVL_RELEASE
#define OVL_RELEASE mbar_arrive
#endif
#ifndef RESCALE_O
#define RESCALE_O rescale_o
#endif
#ifndef OVL_CONSUMER_EXIT
#define OVL_CONSUMER_EXIT()
#endif
#ifndef KV_TAIL
#define KV_TAIL 0
#endif
#if !KV_TAIL && BLOCK_N != 128
#error "a BLOCK_N that does not divide the sequence needs KV_TAIL 1 (a load_kv_tile that zero-fills, masked scores)"
#endif

// --------------------------------------------------------------------------- producer

// one K or V tile into the ring: the version's zero-filling load_kv_tile where the last tile may be
// partial (`rows_left` counts the sequence's rows from this thread's first one), else load_tile
#if KV_TAIL
__device__ __forceinline__ void load_kv_tile(u32 dst, const char* src, int rows_left);
#define COPY_KV(dst, src, rows_left) load_kv_tile(dst, src, rows_left)
#else
#define COPY_KV(dst, src, rows_left) load_tile(dst, src)
#endif

// v06's producer: the 128 threads copy Q once (Q_IN_SMEM) and then K_j, V_j into the ring with
// cp.async, each fill completing on its full barrier by one noinc arrive per thread. Thread t
// copies 16-byte chunk t % 16 of rows 8i + t / 16, so its swizzled destination is one fixed
// offset plus i * 1024 (load_tile).
__device__ __forceinline__ void produce_cp_async(const u16* __restrict__ Q, const u16* __restrict__ K,
                                                 const u16* __restrict__ V, u32 sQ, u32 sK, u32 sV, u32 bar_q,
                                                 u32 bar_full_k, u32 bar_full_v, u32 bar_empty_k, u32 bar_empty_v,
                                                 u64 head_row0, int q0, int n_tiles, int seqlen)
{
    const u32 t = threadIdx.x & 127;
    const u32 r = t >> 4, c16 = t & 15;
#if Q_IN_SMEM
    const u32 dst_off = (c16 >> 3) * HALF_BYTES + r * 128 + (((c16 & 7) ^ r) << 4);      // in Q
#endif
    const u32 kv_off = (c16 >> 3) * KV_HALF_BYTES + r * 128 + (((c16 & 7) ^ r) << 4);   // in K/V
    const u64 src_off = (u64)r * 256 + c16 * 16;

#if Q_IN_SMEM
    const char* q_src = reinterpret_cast<const char*>(Q + (head_row0 + q0) * HEAD_DIM) + src_off;
    load_tile(sQ + dst_off, q_src);
    cp_async_arrive_noinc(bar_q);
#endif

    const char* k_src = reinterpret_cast<const char*>(K + head_row0 * HEAD_DIM) + src_off;
    const char* v_src = reinterpret_cast<const char*>(V + head_row0 * HEAD_DIM) + src_off;
    for (int j = 0; j < n_tiles; ++j) {
        const int s = j % STAGES;
        const u32 phase = (u32)(j / STAGES) & 1u;
        // The consumers release V_j one step later than K_j (at the end of step j + 1), so
        // the wait below for V_j's slot (V_{j-STAGES}'s) has less slack than the K wait.
        mbar_wait(bar_empty_k + 8 * s, phase ^ 1u);
        COPY_KV(sK + s * KV_TILE_BYTES + kv_off, k_src + (u64)j * KV_TILE_BYTES, seqlen - j * BLOCK_N - (int)r);
        cp_async_arrive_noinc(bar_full_k + 8 * s);
        mbar_wait(bar_empty_v + 8 * s, phase ^ 1u);
        COPY_KV(sV + s * KV_TILE_BYTES + kv_off, v_src + (u64)j * KV_TILE_BYTES, seqlen - j * BLOCK_N - (int)r);
        cp_async_arrive_noinc(bar_full_v + 8 * s);
    }
    cp_async_wait_all();  // never leave the CTA with copies in flight
}

// The ring's addresses and the CTA's place, as a producer hook passes them on.
#define OVL_RING sQ, sK, sV, bar_q, bar_full_k, bar_full_v, bar_empty_k, bar_empty_v, head_row0, q0, n_tiles

// --------------------------------------------------------------------------- kernel

#if !Q_IN_SMEM
__device__ __forceinline__ void load_q_frags(u32 (&q)[32], const u16* q_row, int col);
__device__ __forceinline__ void issue_qk_qregs(float (&sc)[64], const u32 (&q)[32], u64 desc_k_stage);
#define OVL_ISSUE_QK(sc, desc_k_stage) issue_qk_qregs(sc, qf, desc_k_stage)
#else
#define OVL_ISSUE_QK(sc, desc_k_stage) issue_qk(sc, desc_q, desc_k_stage)
#endif

extern "C" __global__ void __launch_bounds__(THREADS, 1) OVL_KERNEL_ATTR
OVL_KERNEL(OVL_INPUTS, u16* __restrict__ O, int seqlen, float scale_log2)
{
    extern __shared__ __align__(1024) unsigned char smem_raw[];
    const u32 base = (smem_u32(smem_raw) + 1023u) & ~1023u;
#if Q_IN_SMEM
    const u32 sQ = base;
#else
    const u32 sQ = 0, bar_q = 0;  // no Q tile and no Q barrier (the producer's arguments, unused)
#endif
    const u32 sK = base + Q_IN_SMEM * TILE_BYTES;              // stage s at + s * KV_TILE_BYTES
    const u32 sV = sK + STAGES * KV_TILE_BYTES;                // stage s at + s * KV_TILE_BYTES
    const u32 bars = sV + STAGES * KV_TILE_BYTES;
#if Q_IN_SMEM
    const u32 bar_q = bars;
#endif
    const u32 bar_full_k = bars + 8 * Q_IN_SMEM;               // + 8 * s
    const u32 bar_full_v = bar_full_k + 8 * STAGES;
    const u32 bar_empty_k = bar_full_v + 8 * STAGES;
    const u32 bar_empty_v = bar_empty_k + 8 * STAGES;

#if KV_TAIL
    const int n_tiles = (seqlen + BLOCK_N - 1) / BLOCK_N;      // the last one may be partial
    const int tail = seqlen - (n_tiles - 1) * BLOCK_N;         // valid rows of the last kv tile
#else
    const int n_tiles = seqlen / BLOCK_N;
#endif
    const u64 head_row0 = (u64)blockIdx.y * (u64)seqlen;  // first row of this (batch, head)
    const int q0 = blockIdx.x * BLOCK_M;

    if (threadIdx.x == 0) {
#if Q_IN_SMEM
        mbar_init(bar_q, FULL_ARRIVALS);
#endif
#pragma unroll
        for (int s = 0; s < STAGES; ++s) {
            mbar_init(bar_full_k + 8 * s, FULL_ARRIVALS);
            mbar_init(bar_full_v + 8 * s, FULL_ARRIVALS);
            mbar_init(bar_empty_k + 8 * s, EMPTY_ARRIVALS);
            mbar_init(bar_empty_v + 8 * s, EMPTY_ARRIVALS);
        }
        asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    }
    OVL_AFTER_INIT();

    const int wg = __shfl_sync(0xffffffffu, (int)(threadIdx.x / 128), 0);

    if (wg == 2) {
        // ------------------------------------------------------------------- producer
        asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;" ::"n"(PRODUCER_REGS));
        OVL_PRODUCER();
        return;
    }

    // ----------------------------------------------------------------------- consumers
    asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;" ::"n"(CONSUMER_REGS));
    const int cw = wg;                     // consumer warpgroup 0/1 (warps 0-7): query rows 64*cw .. 64*cw+63
    const int tid = threadIdx.x & 127;
    const int warp = tid >> 5, lane = tid & 31;
    const int row = cw * 64 + warp * 16 + (lane >> 2);  // this thread's rows: row and row + 8
    const int col = 2 * (lane & 3);                      // and columns 8j + col, 8j + col + 1
    const u32 my_turn = TURN_BAR0 + cw, other_turn = TURN_BAR0 + 1 - cw;

#if Q_IN_SMEM
    const u64 desc_q = make_desc(sQ + cw * 64 * 128, K_LBO, K_SBO);
#endif
    const u64 desc_k = make_desc(sK, K_LBO, K_SBO);
    const u64 desc_v = make_desc(sV, V_LBO, V_SBO);

    float o[64];
#pragma unroll
    for (int i = 0; i < 64; ++i) o[i] = 0.f;
    float m0 = __int_as_float(0xff800000), m1 = __int_as_float(0xff800000);  // running max (log2 domain)
    float l0 = 0.f, l1 = 0.f;                                                // per-thread partial row sums

#if Q_IN_SMEM
    mbar_wait(bar_q, 0);
    proxy_fence_async();
#else
    u32 qf[32];  // Q of this thread's rows as A fragments, for every S = Q K^T of the CTA
    load_q_frags(qf, Q + (head_row0 + q0 + row) * HEAD_DIM, col);
#endif

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
        OVL_ISSUE_QK(sc, desc_k);
        wgmma_commit();
        turn_arrive(other_turn);  // n >= 1, so step 0 is never consumer 1's last step
        wgmma_wait<0>();
        fence_acc(sc);
        if (lane == 0) OVL_RELEASE(bar_empty_k);
        float alpha0, alpha1;
#if KV_TAIL
        if (n_tiles == 1 && tail < BLOCK_N) mask_tail(sc, tail, col);
#endif
        softmax_tile(sc, m0, m1, l0, l1, alpha0, alpha1, scale_log2);  // O is still 0: no rescale
        pack_p(sc, p, 1.f);
    }
    for (int j = 1; j < n_tiles; ++j) {
        // ---- step j: S_j and O += P_{j-1} V_{j-1} in one turn
        const int s = j % STAGES, sp = (j - 1) % STAGES;
        const u32 phase = (u32)(j / STAGES) & 1u, phase_p = (u32)((j - 1) / STAGES) & 1u;
        mbar_wait(bar_full_k + 8 * s, phase);
        proxy_fence_async();
        mbar_wait(bar_full_v + 8 * sp, phase_p);
        proxy_fence_async();
        fence_acc(o);
        fence_frag(p);
        fence_acc(sc);
        // region key: v08's step, S_j issued with the previous P V, the softmax while P V runs
        turn_sync(my_turn);
        wgmma_fence();
        OVL_ISSUE_QK(sc, desc_k + (u64)((s * KV_TILE_BYTES) >> 4));     // group: S_j
        wgmma_commit();
        issue_pv(o, p, desc_v + (u64)((sp * KV_TILE_BYTES) >> 4));      // group: O += P_{j-1} V_{j-1}
        wgmma_commit();
        turn_arrive(other_turn);  // j < n: not the last step
        wgmma_wait<1>();          // S_j complete, P.V may still run
        fence_acc(sc);
        if (lane == 0) OVL_RELEASE(bar_empty_k + 8 * s);
        float alpha0, alpha1;
#if KV_TAIL
        if (j == n_tiles - 1 && tail < BLOCK_N) mask_tail(sc, tail, col);
#endif
        softmax_tile(sc, m0, m1, l0, l1, alpha0, alpha1, scale_log2);
        wgmma_wait<0>();          // P_{j-1} V_{j-1} landed: O and P are ours again
        // endregion
        fence_acc(o);
        fence_frag(p);
        if (lane == 0) OVL_RELEASE(bar_empty_v + 8 * sp);
        RESCALE_O(o, alpha0, alpha1);
        pack_p(sc, p, 1.f);
    }
    {
        // ---- step n: O += P_{n-1} V_{n-1} only; consumer 1's last step, no arrive (counting above)
        const int sp = (n_tiles - 1) % STAGES;
        mbar_wait(bar_full_v + 8 * sp, (u32)((n_tiles - 1) / STAGES) & 1u);
        proxy_fence_async();
        fence_acc(o);
        fence_frag(p);
        turn_sync(my_turn);
        wgmma_fence();
        issue_pv(o, p, desc_v + (u64)((sp * KV_TILE_BYTES) >> 4));
        wgmma_commit();
        if (cw == 0) turn_arrive(other_turn);
        wgmma_wait<0>();
        fence_acc(o);
        fence_frag(p);
        if (lane == 0) OVL_RELEASE(bar_empty_v + 8 * sp);
    }

    // ---- epilogue: O / l, fp16, straight from registers
    sum_row_partials(l0, l1);
    store_o_pairs(o, 1.f / l0, 1.f / l1, O + (head_row0 + q0 + row) * HEAD_DIM + col, lane);
    OVL_CONSUMER_EXIT();
}
