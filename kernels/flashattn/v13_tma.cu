// v13: v08 (producer warpgroup + two wgmma consumer warpgroups taking turns on named
// barriers, each overlapping its softmax with its own P.V; sm_90a, fp16, D = 128,
// non-causal) with the producer's copies done by the Tensor Memory Accelerator instead of
// cp.async.
//
// v08's producer was a whole warpgroup: 128 threads, each issuing 16 cp.async of 16 bytes
// per 32 KB tile (135 M LSU requests per call under ncu), computing every address and
// swizzle itself. Here one lane of the producer's first warp issues two
// cp.async.bulk.tensor.2d per tile (one per 64-column half: a box of 128 rows x 64 fp16 =
// 128 B per row, the most a 128-byte swizzle span allows), after an
// mbarrier.arrive.expect_tx of the tile's 32 KB on its full barrier; the copy engine writes
// the same 128-byte-swizzled layout v06 built by hand (16-byte chunk c of row r at
// (c ^ r % 8) * 16 within the row, 1024-byte aligned tiles) and completes the transaction
// count on the barrier. The other three producer warps only lower their registers and exit.
//
// The three tensor maps (Q, K, V viewed as [B*H*S, 128] fp16, box 128 x 64, 128-byte
// swizzle, L2 promotion 256 B) are encoded on the host per call (cuTensorMapEncodeTiled)
// and passed by value as const __grid_constant__ parameters; the copies name them by their
// generic address in parameter space. Full barriers now count one arrival (the expect_tx)
// plus the bytes; the consumers' fence.proxy.async after each wait is gone (PROXY_FENCE 0):
// the TMA writes and the wgmma reads are both in the async proxy, and the barrier's
// complete_tx orders them.
//
// Everything else (consumer steps, turn counting, descriptors, fragment maps, epilogue) is
// v08's; the comments below are v08's where they still hold.
//

#ifndef STAGES
#define STAGES 2                 // K/V ring depth (2: 160 KB smem, 3: 224 KB)
#endif
#ifndef K_LBO
#define K_LBO 16                 // Q/K descriptors (K-major, 128B swizzle): unused by the hardware
#endif
#ifndef K_SBO
#define K_SBO 1024               // 8 rows x 128 B between core-matrix groups
#endif
#ifndef V_LBO
#define V_LBO 16384              // V descriptor (MN-major): between the two 64-wide d halves
#endif
#ifndef V_SBO
#define V_SBO 1024               // between 8-row kv groups
#endif
#ifndef SWIZZLE_MODE
#define SWIZZLE_MODE 1           // descriptor bits 62-63: 1 = 128-byte swizzle
#endif
#ifndef V_TRANS
#define V_TRANS 1                // imm-trans-b of the P.V product (1: V is N-major)
#endif
#ifndef HANG_CHECK
#define HANG_CHECK 1             // a wait longer than HANG_NS faults instead of hanging (not trap: see mbar_wait)
#endif
#ifndef HANG_NS
#define HANG_NS 2000000000ull
#endif
#ifndef PRODUCER_REGS
#define PRODUCER_REGS 24
#endif
#ifndef CONSUMER_REGS
#define CONSUMER_REGS 240
#endif
#ifndef PROXY_FENCE
#define PROXY_FENCE 0            // 1: v08's fence.proxy.async after each full-barrier wait (not needed with TMA)
#endif
#ifndef PINGPONG
#define PINGPONG 1               // 0: no turns between the consumer warpgroups (ablation)
#endif
#ifndef TURN_BAR0
#define TURN_BAR0 1              // named barriers TURN_BAR0 (consumer 0's turn) and TURN_BAR0 + 1; 0 is __syncthreads
#endif

#define HEAD_DIM 128
#define BLOCK_M 128
#define BLOCK_N 128
#define THREADS 384              // consumers are warpgroups 0 and 1, the producer warpgroup 2
#define TILE_BYTES 32768         // 128 rows x 128 fp16
#define HALF_BYTES 16384         // one 64-column half: 128 rows x 128 B
#define NUM_BARRIERS (1 + 4 * STAGES)
// host side must allocate the same: 1024 (alignment slack) + tiles + barriers
#define SMEM_BYTES (1024 + (1 + 2 * STAGES) * TILE_BYTES + 8 * NUM_BARRIERS)

#if SMEM_BYTES > 227 * 1024
#error "STAGES too deep: the tiles do not fit in the 227 KB of shared memory a block can opt in to"
#endif
// __launch_bounds__(384, 1) makes ptxas allocate 168 registers per thread at launch
// (65536 / 384, rounded down to a multiple of 8): a pool of 3 x 168 per warpgroup-thread
// that setmaxnreg can only redistribute. setmaxnreg.inc blocks until the registers it asks
// for were freed by a .dec, so asking for more than the pool hangs the CTA (no trap can
// catch that): 24 + 2 x 240 = 504 = 3 x 168 exactly, FlashAttention-3's split.
#if PRODUCER_REGS + 2 * CONSUMER_REGS > 3 * 168
#error "PRODUCER_REGS + 2 * CONSUMER_REGS must not exceed the 3 x 168 registers allocated at launch"
#endif
#if PRODUCER_REGS % 8 || CONSUMER_REGS % 8 || PRODUCER_REGS < 24 || CONSUMER_REGS > 256
#error "setmaxnreg needs a multiple of 8 in 24..256"
#endif

#include "common/sm90/ptx.cuh"
#include "common/sm90/mbarrier.cuh"
#include "common/sm90/tma.cuh"
#include "common/sm90/wgmma.cuh"
#include "attn_sm90.cuh"

// --------------------------------------------------------------------------- kernel

extern "C" __global__ void __launch_bounds__(THREADS, 1)
attn_fwd_tma(const __grid_constant__ TmaDesc tm_q, const __grid_constant__ TmaDesc tm_k,
             const __grid_constant__ TmaDesc tm_v, u16* __restrict__ O, int seqlen, float scale_log2)
{
    extern __shared__ __align__(1024) unsigned char smem_raw[];
    const u32 base = (smem_u32(smem_raw) + 1023u) & ~1023u;
    const u32 sQ = base;
    const u32 sK = base + TILE_BYTES;                  // stage s at + s * TILE_BYTES
    const u32 sV = base + (1 + STAGES) * TILE_BYTES;   // stage s at + s * TILE_BYTES
    const u32 bars = base + (1 + 2 * STAGES) * TILE_BYTES;
    const u32 bar_q = bars;
    const u32 bar_full_k = bars + 8;                   // + 8 * s
    const u32 bar_full_v = bars + 8 * (1 + STAGES);
    const u32 bar_empty_k = bars + 8 * (1 + 2 * STAGES);
    const u32 bar_empty_v = bars + 8 * (1 + 3 * STAGES);

    const int n_tiles = seqlen / BLOCK_N;
    const u64 head_row0 = (u64)blockIdx.y * (u64)seqlen;  // first row of this (batch, head)
    const int q0 = blockIdx.x * BLOCK_M;

    if (threadIdx.x == 0) {
        mbar_init(bar_q, 1);  // full barriers: the producer's one arrive.expect_tx, then the bytes
#pragma unroll
        for (int s = 0; s < STAGES; ++s) {
            mbar_init(bar_full_k + 8 * s, 1);
            mbar_init(bar_full_v + 8 * s, 1);
            mbar_init(bar_empty_k + 8 * s, 8);
            mbar_init(bar_empty_v + 8 * s, 8);
        }
        asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    }
    __syncthreads();

    const int wg = __shfl_sync(0xffffffffu, (int)(threadIdx.x / 128), 0);

    if (wg == 2) {
        // ------------------------------------------------------------------- producer: one lane issues TMA
        asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;" ::"n"(PRODUCER_REGS));
        if (threadIdx.x % 128 >= 32) return;  // warps 1-3 of the producer warpgroup have nothing to do
        const bool leader = (threadIdx.x & 31) == 0;
        const int row_kv = (int)head_row0;
        if (leader) {
            prefetch_tensor_map(&tm_q);
            prefetch_tensor_map(&tm_k);
            prefetch_tensor_map(&tm_v);
            mbar_arrive_expect_tx(bar_q, TILE_BYTES);
            load_tile_tma(sQ, &tm_q, row_kv + q0, bar_q);
        }
        for (int j = 0; j < n_tiles; ++j) {
            const int s = j % STAGES;
            const u32 phase = (u32)(j / STAGES) & 1u;
            // The consumers release V_j one step later than K_j (at the end of step j + 1), so
            // the wait below for V_j's slot (V_{j-STAGES}'s) has less slack than the K wait.
            // The whole warp waits (mbar_wait ends in __syncwarp); lane 0 issues.
            mbar_wait(bar_empty_k + 8 * s, phase ^ 1u);
            if (leader) {
                mbar_arrive_expect_tx(bar_full_k + 8 * s, TILE_BYTES);
                load_tile_tma(sK + s * TILE_BYTES, &tm_k, row_kv + j * BLOCK_N, bar_full_k + 8 * s);
            }
            mbar_wait(bar_empty_v + 8 * s, phase ^ 1u);
            if (leader) {
                mbar_arrive_expect_tx(bar_full_v + 8 * s, TILE_BYTES);
                load_tile_tma(sV + s * TILE_BYTES, &tm_v, row_kv + j * BLOCK_N, bar_full_v + 8 * s);
            }
        }
        return;  // the copies still in flight complete on barriers the consumers wait for
    }

    // ----------------------------------------------------------------------- consumers
    asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;" ::"n"(CONSUMER_REGS));
    const int cw = wg;                     // consumer warpgroup 0/1 (warps 0-7): query rows 64*cw .. 64*cw+63
    const int tid = threadIdx.x & 127;
    const int warp = tid >> 5, lane = tid & 31;
    const int row = cw * 64 + warp * 16 + (lane >> 2);  // this thread's rows: row and row + 8
    const int col = 2 * (lane & 3);                      // and columns 8j + col, 8j + col + 1
    const u32 my_turn = TURN_BAR0 + cw, other_turn = TURN_BAR0 + 1 - cw;

    const u64 desc_q = make_desc(sQ + cw * 64 * 128, K_LBO, K_SBO);
    const u64 desc_k = make_desc(sK, K_LBO, K_SBO);
    const u64 desc_v = make_desc(sV, V_LBO, V_SBO);

    float o[64];
#pragma unroll
    for (int i = 0; i < 64; ++i) o[i] = 0.f;
    float m0 = __int_as_float(0xff800000), m1 = __int_as_float(0xff800000);  // running max (log2 domain)
    float l0 = 0.f, l1 = 0.f;                                                // per-thread partial row sums

    mbar_wait(bar_q, 0);
    proxy_fence_async();

    // consumer 0 takes the first turn: consumer 1's one arrive ahead of its loop (counting above)
    if (cw == 1) turn_arrive(TURN_BAR0);

    float sc[64];
    u32 p[32];
    {
        // ---- step 0: S_0 only
        mbar_wait(bar_full_k, 0);
        proxy_fence_async();
        turn_sync(my_turn);
        wgmma_fence();
        issue_qk(sc, desc_q, desc_k);
        wgmma_commit();
        turn_arrive(other_turn);  // n >= 1, so step 0 is never consumer 1's last step
        wgmma_wait<0>();
        fence_acc(sc);
        if (lane == 0) mbar_arrive(bar_empty_k);
        float alpha0, alpha1;
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
        turn_sync(my_turn);
        wgmma_fence();
        issue_qk(sc, desc_q, desc_k + (u64)((s * TILE_BYTES) >> 4));      // group: S_j
        wgmma_commit();
        issue_pv(o, p, desc_v + (u64)((sp * TILE_BYTES) >> 4));           // group: O += P_{j-1} V_{j-1}
        wgmma_commit();
        turn_arrive(other_turn);  // j < n: not the last step
        wgmma_wait<1>();          // S_j complete, P.V may still run
        fence_acc(sc);
        if (lane == 0) mbar_arrive(bar_empty_k + 8 * s);
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
        // ---- step n: O += P_{n-1} V_{n-1} only; consumer 1's last step, no arrive (counting above)
        const int sp = (n_tiles - 1) % STAGES;
        mbar_wait(bar_full_v + 8 * sp, (u32)((n_tiles - 1) / STAGES) & 1u);
        proxy_fence_async();
        fence_acc(o);
        fence_frag(p);
        turn_sync(my_turn);
        wgmma_fence();
        issue_pv(o, p, desc_v + (u64)((sp * TILE_BYTES) >> 4));
        wgmma_commit();
        if (cw == 0) turn_arrive(other_turn);
        wgmma_wait<0>();
        fence_acc(o);
        fence_frag(p);
        if (lane == 0) mbar_arrive(bar_empty_v + 8 * sp);
    }

    // ---- epilogue: O / l, fp16, straight from registers
    l0 += __shfl_xor_sync(0xffffffffu, l0, 1);
    l1 += __shfl_xor_sync(0xffffffffu, l1, 1);
    l0 += __shfl_xor_sync(0xffffffffu, l0, 2);
    l1 += __shfl_xor_sync(0xffffffffu, l1, 2);
    const float inv0 = 1.f / l0, inv1 = 1.f / l1;
    u16* o0 = O + (head_row0 + q0 + row) * HEAD_DIM + col;
    u16* o1 = o0 + 8 * HEAD_DIM;
#pragma unroll
    for (int jj = 0; jj < 16; ++jj) {
        st_global_b32(o0 + 8 * jj, pack_half2(o[4 * jj] * inv0, o[4 * jj + 1] * inv0));
        st_global_b32(o1 + 8 * jj, pack_half2(o[4 * jj + 2] * inv1, o[4 * jj + 3] * inv1));
    }
}
