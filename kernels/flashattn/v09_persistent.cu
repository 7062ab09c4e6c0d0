// v09: v08 (producer warpgroup + two wgmma consumer warpgroups taking turns, each overlapping
// its softmax with its own P V; sm_90a, fp16, D = 128, non-causal) made persistent: one CTA
// per SM loops over work tiles (a 128-row Q block of one (batch, head)), and the producer
// runs ahead across tile boundaries.
//
// Grid = min(#SMs, #tiles) CTAs; CTA c takes tiles c, c + gridDim.x, ... Tile t is Q block
// t % QB of (batch, head) t / QB (QB = S / 128), so the CTAs in flight at any moment work on
// two or three heads and share their K/V in L2, as the one-tile-per-CTA grid of v08 did.
//
// What persistence buys: in v08 each of the ~124 CTAs an SM runs in turn starts cold (its
// Q and first K/V tiles come from memory while the tensor cores idle) and ends with an
// epilogue during which nothing is loaded. Here the K/V ring and its mbarrier phases run on
// through the tiles of a CTA (one running tile counter `it`), so the producer fills the ring
// with the next tile's K/V while the consumers finish the last P V and write O. The Q tile
// has one buffer: the consumers release it (Q-empty mbarrier, one arrive per consumer warp)
// as soon as the last S = Q K^T of a tile has landed, and the producer loads the next Q
// while they run the tile's last step and epilogue.
//
// The turns (named barriers TURN[0], TURN[1]) also run on across tiles: the steps of all of
// a CTA's tiles form one sequence of T = tiles x (n + 1) steps per consumer. Consumer 1
// arrives on TURN[0] once before its first step and after each of its steps but the very
// last; consumer 0 arrives on TURN[1] after each of its steps. So TURN[0] gets T syncs and
// T arrives, TURN[1] the same, and consumer 0 can start the next tile's first S = Q K^T as
// soon as consumer 1 has issued its last P V of the current one, without waiting for its
// epilogue.
//
// Consumer step schedule inside a tile (v08's): step j issues S_j = Q K_j^T (j < n) and
// O += P_{j-1} V_{j-1} (j > 0) in one turn, waits for S_j alone, runs its softmax while
// P V is in flight, then waits for P V, rescales O and packs P_j.
//
// Hang check: as v08 (a faulting store, not trap; see mbar_wait).

#define Q_BARRIERS 2             // Q full + Q empty, then K/V full/empty per stage
#include "attn_sm90_config.cuh"
#include "common/sm90/ptx.cuh"
#include "common/sm90/mbarrier.cuh"
#include "common/sm90/cp_async.cuh"
#include "common/sm90/wgmma.cuh"
#include "attn_sm90.cuh"
#include "attn_sm90_cta.cuh"

// --------------------------------------------------------------------------- kernel

// kv tile number `it` (running over all of the CTA's tiles) -> ring slot and phase parity
__device__ __forceinline__ u32 slot_of(u32 it) { return it % STAGES; }
__device__ __forceinline__ u32 parity_of(u32 it) { return (it / STAGES) & 1u; }

extern "C" __global__ void __launch_bounds__(THREADS, 1)
attn_fwd_persistent(const u16* __restrict__ Q, const u16* __restrict__ K, const u16* __restrict__ V,
                    u16* __restrict__ O, int seqlen, int n_work, float scale_log2)
{
    extern __shared__ __align__(1024) unsigned char smem_raw[];
    const auto [sQ, sK, sV, bars] = smem_tiles(smem_raw, 1);
    const u32 bar_q_full = bars;
    const u32 bar_q_empty = bars + 8;
    const auto [bar_full_k, bar_full_v, bar_empty_k, bar_empty_v] = ring_bars(bars + 16);

    const int n_tiles = seqlen / BLOCK_N;              // kv tiles per work tile (n)
    const int q_blocks = seqlen / BLOCK_M;

    if (threadIdx.x == 0) {
        mbar_init(bar_q_full, PRODUCER_THREADS);
        mbar_init(bar_q_empty, 8);
        init_ring_bars(bar_full_k, bar_full_v, bar_empty_k, bar_empty_v, PRODUCER_THREADS, 8);
        asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    }
    __syncthreads();

    const int wg = __shfl_sync(0xffffffffu, (int)(threadIdx.x / 128), 0);

    if (wg == 2) {
        // ------------------------------------------------------------------- producer
        asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;" ::"n"(PRODUCER_REGS));
        const u32 t = threadIdx.x & 127;
        const u32 r = t >> 4, c16 = t & 15;
        const u32 dst_off = (c16 >> 3) * HALF_BYTES + r * 128 + (((c16 & 7) ^ r) << 4);
        const u64 src_off = (u64)r * 256 + c16 * 16;
        u32 it = 0, local = 0;
        for (int work = blockIdx.x; work < n_work; work += gridDim.x, ++local) {
            const u64 head_row0 = (u64)(work / q_blocks) * (u64)seqlen;
            const int q0 = (work % q_blocks) * BLOCK_M;
            const char* k_src = reinterpret_cast<const char*>(K + head_row0 * HEAD_DIM) + src_off;
            const char* v_src = reinterpret_cast<const char*>(V + head_row0 * HEAD_DIM) + src_off;
            for (int j = 0; j < n_tiles; ++j, ++it) {
                const u32 s = slot_of(it), ph = parity_of(it);
                mbar_wait(bar_empty_k + 8 * s, ph ^ 1u);
                load_tile(sK + s * TILE_BYTES + dst_off, k_src + (u64)j * TILE_BYTES);
                cp_async_arrive_noinc(bar_full_k + 8 * s);
                if (j == 0) {
                    // the single Q buffer, after the tile's first K (both are needed for the
                    // first product): free once both consumers' last S = Q K^T of the previous
                    // tile landed (parity 1 passes at once on the first tile)
                    mbar_wait(bar_q_empty, (local & 1u) ^ 1u);
                    load_tile(sQ + dst_off, reinterpret_cast<const char*>(Q + (head_row0 + q0) * HEAD_DIM) + src_off);
                    cp_async_arrive_noinc(bar_q_full);
                }
                mbar_wait(bar_empty_v + 8 * s, ph ^ 1u);
                load_tile(sV + s * TILE_BYTES + dst_off, v_src + (u64)j * TILE_BYTES);
                cp_async_arrive_noinc(bar_full_v + 8 * s);
            }
        }
        cp_async_wait_all();  // never leave the CTA with copies in flight
        return;
    }

    // ----------------------------------------------------------------------- consumers
    asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;" ::"n"(CONSUMER_REGS));
    const int cw = wg;                     // consumer warpgroup 0/1: query rows 64*cw .. 64*cw+63 of a tile
    const auto [tid, lane, row, col] = consumer_thread(cw);
    const u32 my_turn = TURN_BAR0 + cw, other_turn = TURN_BAR0 + 1 - cw;

    const u64 desc_q = make_desc(sQ + cw * 64 * 128, K_LBO, K_SBO);
    const u64 desc_k = make_desc(sK, K_LBO, K_SBO);
    const u64 desc_v = make_desc(sV, V_LBO, V_SBO);

    // consumer 0 takes the first turn: consumer 1's one arrive ahead of all its steps (the
    // launch never gives a CTA no work, which would leave this arrive unmatched)
    if (cw == 1 && (int)blockIdx.x < n_work) turn_arrive(TURN_BAR0);

    u32 it = 0, local = 0;                 // the producer's counters, followed in step
    for (int work = blockIdx.x; work < n_work; work += gridDim.x, ++local) {
        const bool last_work = work + (int)gridDim.x >= n_work;
        const u64 head_row0 = (u64)(work / q_blocks) * (u64)seqlen;
        const int q0 = (work % q_blocks) * BLOCK_M;

        float o[64], m0, m1, l0, l1;
        start_rows(o, m0, m1, l0, l1);

        mbar_wait(bar_q_full, local & 1u);
        proxy_fence_async();

        float sc[64];
        u32 p[32];
        {
            // ---- step 0: S_0 only
            const u32 s = slot_of(it);
            mbar_wait(bar_full_k + 8 * s, parity_of(it));
            proxy_fence_async();
            turn_sync(my_turn);
            wgmma_fence();
            issue_qk(sc, desc_q, desc_k + (u64)((s * TILE_BYTES) >> 4));
            wgmma_commit();
            turn_arrive(other_turn);  // n >= 1: step 0 is never a tile's last step
            wgmma_wait<0>();
            fence_acc(sc);
            if (lane == 0) {
                mbar_arrive(bar_empty_k + 8 * s);
                if (n_tiles == 1) mbar_arrive(bar_q_empty);  // that was the tile's last Q K^T
            }
            float alpha0, alpha1;
            softmax_tile(sc, m0, m1, l0, l1, alpha0, alpha1, scale_log2);  // O is still 0: no rescale
            pack_p(sc, p, 1.f);
        }
        for (int j = 1; j < n_tiles; ++j) {
            // ---- step j: S_j and O += P_{j-1} V_{j-1} in one turn
            const u32 s = slot_of(it + j), sp = slot_of(it + j - 1);
            mbar_wait(bar_full_k + 8 * s, parity_of(it + j));
            proxy_fence_async();
            mbar_wait(bar_full_v + 8 * sp, parity_of(it + j - 1));
            proxy_fence_async();
            fence_acc(o);
            fence_frag(p);
            fence_acc(sc);
            turn_sync(my_turn);
            wgmma_fence();
            issue_qk(sc, desc_q, desc_k + (u64)((s * TILE_BYTES) >> 4));      // group: S_j
            wgmma_commit();
            issue_pv(o, p, desc_v + (u64)((sp * TILE_BYTES) >> 4));           // group: O += P_{j-1} V_{j-1}
            wgmma_commit();
            turn_arrive(other_turn);  // j < n: not the tile's last step
            wgmma_wait<1>();          // S_j complete, P V may still run
            fence_acc(sc);
            if (lane == 0) {
                mbar_arrive(bar_empty_k + 8 * s);
                if (j == n_tiles - 1) mbar_arrive(bar_q_empty);  // the tile's last Q K^T landed
            }
            float alpha0, alpha1;
            softmax_tile(sc, m0, m1, l0, l1, alpha0, alpha1, scale_log2);
            wgmma_wait<0>();          // P_{j-1} V_{j-1} landed: O and P are ours again
            fence_acc(o);
            fence_frag(p);
            if (lane == 0) mbar_arrive(bar_empty_v + 8 * sp);
            rescale_o(o, alpha0, alpha1);
            pack_p(sc, p, 1.f);
        }
        {
            // ---- step n: O += P_{n-1} V_{n-1} only
            const u32 sp = slot_of(it + n_tiles - 1);
            mbar_wait(bar_full_v + 8 * sp, parity_of(it + n_tiles - 1));
            proxy_fence_async();
            fence_acc(o);
            fence_frag(p);
            turn_sync(my_turn);
            wgmma_fence();
            issue_pv(o, p, desc_v + (u64)((sp * TILE_BYTES) >> 4));
            wgmma_commit();
            if (cw == 0 || !last_work) turn_arrive(other_turn);  // consumer 1's very last step: none
            wgmma_wait<0>();
            fence_acc(o);
            fence_frag(p);
            if (lane == 0) mbar_arrive(bar_empty_v + 8 * sp);
        }
        it += n_tiles;

        // ---- epilogue: O / l, fp16, straight from registers (the producer is already
        // filling the ring with the next tile's K/V)
        sum_row_partials(l0, l1);
        store_o_pairs(o, 1.f / l0, 1.f / l1, O + (head_row0 + q0 + row) * HEAD_DIM + col, lane);
    }
}
