// v07: v06 (producer warpgroup + two wgmma consumer warpgroups, sm_90a, fp16, D = 128,
// non-causal) plus FlashAttention-3's inter-warpgroup "ping-pong" schedule, with the two
// products of a consumer software-pipelined so that each turn issues both.
//
// Everything but the consumers' main loop is v06's (see v06_wgmma.cu for the shared-memory
// layout, the descriptors, the fragment maps and the PTX facts they rely on); the debug
// modes are gone (v06's self-test settled the descriptors: K_LBO 16, K_SBO 1024, V_LBO 16384,
// V_SBO 1024). Structure: the set-up is attn_sm90_cta.cuh's, the producer warpgroup and the
// P V step outside the turn are v06's (attn_sm90_wgmma.cuh); this file holds the one-warp
// producer, the turns and the two consumer loops that take them.
//
// The one idea: the two consumer warpgroups take turns on the tensor cores. A turn is
// guarded by a named barrier per warpgroup (TURN[w] = bar id TURN_BAR0 + w, 256 threads:
// 128 syncing + 128 arriving). With PIPELINE 1 (off by default, see below), consumer w runs one step per kv
// tile j = 0..n (n tiles, n + 1 steps):
//
//     wait for K_j / V_{j-1} to be in shared memory (mbarriers, outside the turn)
//     bar.sync   TURN[w]                 my turn
//     issue S_j = Q K_j^T                (j < n; wgmma SS, commit group)
//     issue O += P_{j-1} V_{j-1}         (j > 0; wgmma RS, A = P_{j-1} in registers, commit)
//     bar.arrive TURN[1-w]               the other warpgroup may issue its products now
//     wait S_j (wait_group 1 if a P.V group is in flight, else 0), release K_j,
//         online softmax S_j -> row max / sums, alpha_j        (j < n)
//     wait_group 0 (P_{j-1} V_{j-1} landed), release V_{j-1},
//         O *= alpha_j, P_j = fp16(exp2(...)) packed into A fragments   (j < n)
//
// so one warpgroup's softmax (ex2, shuffles, FMAs: the SFU/ALU side) runs while the other's
// 16 wgmma of the turn keep the tensor cores busy. O is rescaled only after P_{j-1} V_{j-1}
// landed (the in-flight wgmma owns O's registers), and P_j overwrites P_{j-1} only then too.
// Step 0 and step n are peeled off the loop so that no wgmma sits under a condition.
//
// Barrier counting (named barriers complete a phase when 256 threads arrived: the 128 of
// the owner's bar.sync plus the 128 of the other's bar.arrive; an arrive may run at most
// one phase ahead of the matching sync, which the alternation guarantees):
//   TURN[0]: consumer 0 syncs once per step = NSTEPS times; consumer 1 arrives once before
//            its loop ("consumer 0 goes first") and after each of its steps but the last:
//            1 + (NSTEPS - 1) = NSTEPS.
//   TURN[1]: consumer 1 syncs NSTEPS times; consumer 0 arrives after each of its NSTEPS
//            steps: NSTEPS.
// NSTEPS = n + 1 with PIPELINE 1, n with PIPELINE 0. Every phase is thus completed and no
// barrier is left with a partial arrival count when the CTA exits. Named barriers cannot
// time out: HANG_TRAP covers only the mbarrier waits.
//
// PIPELINE 0 (lean, the DEFAULT because PIPELINE 1 spills, see v07_pingpong.py): the turn covers only S_j = Q K_j^T; the softmax,
// the rescale and O += P_j V_j follow outside the turn, as in v06. It keeps v06's register
// footprint (S and O, or O and P, live at once) while still alternating the Q K^T products.
//
// Registers: PIPELINE 1 keeps S_j (64 f32) + O (64 f32) + P_{j-1} (32 b32) + softmax state
// live across the issue point (~180); consumers have 240 after setmaxnreg.inc, 3 x 168 at
// launch. See v07_pingpong.py's docstring for what ptxas makes of it.

#ifndef HANG_TRAP
#define HANG_TRAP 1              // a wait longer than HANG_NS traps instead of hanging
#endif
#ifndef PIPELINE
#define PIPELINE 0               // 1 (spills, see the .py): S_j and P_{j-1}.V_{j-1} issued in the same turn (see the kernel); 0: lean
#endif
#ifndef PRODUCER_WARPS
#define PRODUCER_WARPS 4         // 4: v06's producer warpgroup + setmaxnreg 24/240; 1: one producer warp, no setmaxnreg
#endif
#if PRODUCER_WARPS != 1 && PRODUCER_WARPS != 4
#error "PRODUCER_WARPS must be 1 or 4"
#endif
#define PRODUCER_THREADS (32 * PRODUCER_WARPS)
#include "attn_sm90_config.cuh"
#include "common/sm90/ptx.cuh"
#include "common/sm90/mbarrier.cuh"
#include "common/sm90/cp_async.cuh"
#include "common/sm90/wgmma.cuh"
#include "attn_sm90.cuh"
#include "attn_sm90_cta.cuh"
#include "attn_sm90_wgmma.cuh"

// --------------------------------------------------------------------------- this version's own helpers

// The same with one producer warp (PRODUCER_WARPS 1): lane l copies chunk c16 = l % 16 of rows
// 2i + l / 16, i = 0..63 (a warp still reads 512 contiguous bytes per instruction).
__device__ __forceinline__ void load_tile_warp(u32 dst_tile, const char* src_tile, u32 lane)
{
    const u32 c16 = lane & 15, hi = lane >> 4;
    const u32 half = (c16 >> 3) * HALF_BYTES, c = c16 & 7;
#pragma unroll
    for (int i = 0; i < 64; ++i) {
        const u32 r = 2 * i + hi;
        cp_async16(dst_tile + half + r * 128 + ((c ^ (r & 7)) << 4), src_tile + r * 256 + c16 * 16);
    }
}

// The turns of the two consumer warpgroups (named barriers over their 256 threads), always taken:
// v08 on use attn_sm90.cuh's turn_sync / turn_arrive, which PINGPONG 0 compiles out.
__device__ __forceinline__ void turn_sync_always(u32 id)
{
    asm volatile("bar.sync %0, 256;" ::"r"(id) : "memory");
}

__device__ __forceinline__ void turn_arrive_always(u32 id)
{
    asm volatile("bar.arrive %0, 256;" ::"r"(id) : "memory");
}

// --------------------------------------------------------------------------- kernel

extern "C" __global__ void __launch_bounds__(THREADS, 1)
attn_fwd_pingpong(const u16* __restrict__ Q, const u16* __restrict__ K, const u16* __restrict__ V,
                  u16* __restrict__ O, int seqlen, float scale_log2)
{
    extern __shared__ __align__(1024) unsigned char smem_raw[];
    const auto [sQ, sK, sV, bars] = smem_tiles(smem_raw, 1);  // v06's: Q | K x STAGES | V x STAGES | barriers
    const u32 bar_q = bars;
    const auto [bar_full_k, bar_full_v, bar_empty_k, bar_empty_v] = ring_bars(bars + 8);

    const int n_tiles = seqlen / BLOCK_N;
    const u64 head_row0 = (u64)blockIdx.y * (u64)seqlen;  // first row of this (batch, head)
    const int q0 = blockIdx.x * BLOCK_M;

    if (threadIdx.x == 0) {
        mbar_init(bar_q, PRODUCER_THREADS);
        init_ring_bars(bar_full_k, bar_full_v, bar_empty_k, bar_empty_v, PRODUCER_THREADS, 8);
        asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    }
    __syncthreads();

    const int wg = __shfl_sync(0xffffffffu, (int)(threadIdx.x / 128), 0);

    if (wg == 2) {
        // ------------------------------------------------------------------- producer (v06's)
#if PRODUCER_WARPS == 1
        const u32 lane = threadIdx.x & 31;
        load_tile_warp(sQ, reinterpret_cast<const char*>(Q + (head_row0 + q0) * HEAD_DIM), lane);
        cp_async_arrive_noinc(bar_q);
        const char* k_src = reinterpret_cast<const char*>(K + head_row0 * HEAD_DIM);
        const char* v_src = reinterpret_cast<const char*>(V + head_row0 * HEAD_DIM);
        for (int j = 0; j < n_tiles; ++j) {
            const int s = j % STAGES;
            const u32 phase = (u32)(j / STAGES) & 1u;
            mbar_wait_trap(bar_empty_k + 8 * s, phase ^ 1u);
            load_tile_warp(sK + s * TILE_BYTES, k_src + (u64)j * TILE_BYTES, lane);
            cp_async_arrive_noinc(bar_full_k + 8 * s);
            mbar_wait_trap(bar_empty_v + 8 * s, phase ^ 1u);
            load_tile_warp(sV + s * TILE_BYTES, v_src + (u64)j * TILE_BYTES, lane);
            cp_async_arrive_noinc(bar_full_v + 8 * s);
        }
        cp_async_wait_all();
        return;
#else
        asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;" ::"n"(PRODUCER_REGS));
        produce_cp_async_trap(threadIdx.x & 127, Q, K, V, sQ, sK, sV, bar_q, bar_full_k, bar_full_v, bar_empty_k,
                              bar_empty_v, head_row0, q0, n_tiles);
        return;
#endif
    }

    // ----------------------------------------------------------------------- consumers
#if PRODUCER_WARPS == 4
    asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;" ::"n"(CONSUMER_REGS));
#endif
    const int cw = wg;                     // consumer warpgroup 0/1 (warps 0-7): query rows 64*cw .. 64*cw+63
    const auto [tid, lane, row, col] = consumer_thread(cw);
    const u32 my_turn = TURN_BAR0 + cw, other_turn = TURN_BAR0 + 1 - cw;

    const u64 desc_q = make_desc(sQ + cw * 64 * 128, K_LBO, K_SBO);
    const u64 desc_k = make_desc(sK, K_LBO, K_SBO);
    const u64 desc_v = make_desc(sV, V_LBO, V_SBO);

    float o[64];
    zero_acc(o);
    float m0 = __int_as_float(0xff800000), m1 = __int_as_float(0xff800000);  // running max (log2 domain)
    float l0 = 0.f, l1 = 0.f;                                                // per-thread partial row sums

    mbar_wait_trap(bar_q, 0);
    proxy_fence_async();

    // consumer 0 takes the first turn: consumer 1's one arrive ahead of its loop (counting above)
    if (cw == 1) turn_arrive_always(TURN_BAR0);

#if PIPELINE
    // the overlapped schedule in turns (attn_sm90_wgmma_overlapped.cuh, v06's INTRA_WG_OVERLAP)
#define OVERLAP_TAKE_TURN() turn_sync_always(my_turn)
#define OVERLAP_PASS_TURN() turn_arrive_always(other_turn)
#define OVERLAP_PASS_LAST_TURN() \
    if (cw == 0) turn_arrive_always(other_turn)  // consumer 1's last step: no arrive (counting above)
#endif
#include "attn_sm90_wgmma_overlapped.cuh"  // the overlapped schedule where the hooks are defined, else nothing
#if !PIPELINE
    // region key: v06's loop, each S = Q K^T issued in this warpgroup's turn
    for (int j = 0; j < n_tiles; ++j) {
        const int s = j % STAGES;
        const u32 phase = (u32)(j / STAGES) & 1u;

        // ---- S = Q K^T in my turn; consumer 1 passes no turn after its last
        float sc[64];
        mbar_wait_trap(bar_full_k + 8 * s, phase);
        proxy_fence_async();
        turn_sync_always(my_turn);
        wgmma_fence();
        issue_qk(sc, desc_q, desc_k + (u64)((s * TILE_BYTES) >> 4));
        wgmma_commit();
        if (cw == 0 || j + 1 < n_tiles) turn_arrive_always(other_turn);
        wgmma_wait<0>();
        fence_acc(sc);
        if (lane == 0) mbar_arrive(bar_empty_k + 8 * s);

        u32 p[32];
        float alpha0, alpha1;
        softmax_tile(sc, m0, m1, l0, l1, alpha0, alpha1, scale_log2);
        rescale_o(o, alpha0, alpha1);
        pack_p(sc, p, 1.f);

        // ---- O += P V, outside the turn (as v06)
        pv_step_trap(o, p, desc_v, bar_full_v, bar_empty_v, lane, s, phase);
    }
    // endregion
#endif  // PIPELINE

    // ---- epilogue: O / l, fp16, straight from registers
    sum_row_partials(l0, l1);
    store_o_pairs(o, 1.f / l0, 1.f / l1, O + (head_row0 + q0 + row) * HEAD_DIM + col, lane);
}
