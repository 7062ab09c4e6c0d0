// v11: v08 (producer warpgroup + two wgmma consumer warpgroups taking turns, each overlapping
// its softmax with its own P V; sm_90a, fp16, D = 128, non-causal) with Q held in registers:
// S = Q K^T becomes a register-A wgmma (like P V), so no product reads Q from shared memory.
//
// Each consumer thread loads its Q fragments once, straight from global memory, into the
// A-fragment layout (32 registers: rows `row`, `row` + 8; see load_q_frags), and every
// S_j = Q K_j^T is eight wgmma m64n128k16 with A = those registers and B = K_j through the
// same K-major descriptor as before. The producer no longer copies Q and the Q buffer and its
// mbarrier are gone (32 KB less shared memory per CTA).
//
// Why: an m64n128k16 product with both operands in shared memory reads 2 KB of A and 4 KB of
// B. Per kv tile a consumer warpgroup read 16 KB of Q, 32 KB of K and 32 KB of V; now 64 KB,
// a fifth less shared-memory traffic for the same tensor work. Under the card's power cap,
// less data moved per flop is a higher clock. The price: 32 more live registers per consumer
// thread (the loop stays within the 240 of setmaxnreg; see the .py for ptxas's report).
//
// Everything else is v08's; see v08_overlap.cu for the schedule and the barrier counting,
// v06_wgmma.cu for the layout and the PTX facts.

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
#define PROXY_FENCE 1
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
#define PRODUCER_THREADS 128
#define THREADS 384              // consumers are warpgroups 0 and 1, the producer warpgroup 2
#define TILE_BYTES 32768         // 128 rows x 128 fp16
#define HALF_BYTES 16384         // one 64-column half: 128 rows x 128 B
#define NUM_BARRIERS (4 * STAGES)
// host side must allocate the same: 1024 (alignment slack) + tiles + barriers
#define SMEM_BYTES (1024 + 2 * STAGES * TILE_BYTES + 8 * NUM_BARRIERS)

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
#include "common/sm90/cp_async.cuh"
#include "common/sm90/wgmma.cuh"
#include "attn_sm90.cuh"

// --------------------------------------------------------------------------- this version's own helpers

// S (64 x 128 fp32) = Q_wg (64 x 128) . K_tile^T with Q's A fragments in registers (load_q_frags):
// 8 k16 steps; within a 64-column half a step is +32 B on K's start address (inside the 128-byte
// swizzle row), the second half is HALF_BYTES further. The first step ignores the old
// accumulator (scale-d = 0).
__device__ __forceinline__ void issue_qk_qregs(float (&sc)[64], const u32 (&q)[32], u64 desc_k_stage)
{
#pragma unroll
    for (int kk = 0; kk < 8; ++kk) {
        const u64 koff = (u64)(((kk >> 2) * HALF_BYTES + (kk & 3) * 32) >> 4);
        wgmma_m64n128k16_rs_flags<0>(sc, q[4 * kk], q[4 * kk + 1], q[4 * kk + 2], q[4 * kk + 3], desc_k_stage + koff,
                                     kk > 0 ? 1u : 0u);
    }
}

// This thread's Q fragments, straight from global memory into the A-fragment layout of the
// m64nNk16 products (the same map as P's, see pack_p): k-chunk kk of rows `row` and `row` + 8,
// columns 16kk + col (+1) and 16kk + 8 + col (+1), as f16x2. 32 registers, loaded once.
__device__ __forceinline__ void load_q_frags(u32 (&q)[32], const u16* q_row, int col)
{
    const u32* r0 = reinterpret_cast<const u32*>(q_row + col);
    const u32* r8 = reinterpret_cast<const u32*>(q_row + 8 * HEAD_DIM + col);
#pragma unroll
    for (int kk = 0; kk < 8; ++kk) {
        q[4 * kk] = __ldg(r0 + 8 * kk);          // (row, 16kk + col): u32 index = half index / 2
        q[4 * kk + 1] = __ldg(r8 + 8 * kk);      // (row + 8, 16kk + col)
        q[4 * kk + 2] = __ldg(r0 + 8 * kk + 4);  // (row, 16kk + 8 + col)
        q[4 * kk + 3] = __ldg(r8 + 8 * kk + 4);  // (row + 8, 16kk + 8 + col)
    }
}

// --------------------------------------------------------------------------- kernel

extern "C" __global__ void __launch_bounds__(THREADS, 1)
attn_fwd_qreg(const u16* __restrict__ Q, const u16* __restrict__ K, const u16* __restrict__ V,
                  u16* __restrict__ O, int seqlen, float scale_log2)
{
    extern __shared__ __align__(1024) unsigned char smem_raw[];
    const u32 base = (smem_u32(smem_raw) + 1023u) & ~1023u;
    const u32 sK = base;                               // stage s at + s * TILE_BYTES
    const u32 sV = base + STAGES * TILE_BYTES;         // stage s at + s * TILE_BYTES
    const u32 bars = base + 2 * STAGES * TILE_BYTES;
    const u32 bar_full_k = bars;                       // + 8 * s
    const u32 bar_full_v = bars + 8 * STAGES;
    const u32 bar_empty_k = bars + 8 * (2 * STAGES);
    const u32 bar_empty_v = bars + 8 * (3 * STAGES);

    const int n_tiles = seqlen / BLOCK_N;
    const u64 head_row0 = (u64)blockIdx.y * (u64)seqlen;  // first row of this (batch, head)
    const int q0 = blockIdx.x * BLOCK_M;

    if (threadIdx.x == 0) {
#pragma unroll
        for (int s = 0; s < STAGES; ++s) {
            mbar_init(bar_full_k + 8 * s, PRODUCER_THREADS);
            mbar_init(bar_full_v + 8 * s, PRODUCER_THREADS);
            mbar_init(bar_empty_k + 8 * s, 8);
            mbar_init(bar_empty_v + 8 * s, 8);
        }
        asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    }
    __syncthreads();

    const int wg = __shfl_sync(0xffffffffu, (int)(threadIdx.x / 128), 0);

    if (wg == 2) {
        // ------------------------------------------------------------------- producer (v06's, without Q)
        asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;" ::"n"(PRODUCER_REGS));
        const u32 t = threadIdx.x & 127;
        const u32 r = t >> 4, c16 = t & 15;
        const u32 dst_off = (c16 >> 3) * HALF_BYTES + r * 128 + (((c16 & 7) ^ r) << 4);
        const u64 src_off = (u64)r * 256 + c16 * 16;

        const char* k_src = reinterpret_cast<const char*>(K + head_row0 * HEAD_DIM) + src_off;
        const char* v_src = reinterpret_cast<const char*>(V + head_row0 * HEAD_DIM) + src_off;
        for (int j = 0; j < n_tiles; ++j) {
            const int s = j % STAGES;
            const u32 phase = (u32)(j / STAGES) & 1u;
            // The consumers release V_j one step later than K_j (at the end of step j + 1), so
            // the wait below for V_j's slot (V_{j-STAGES}'s) has less slack than the K wait.
            mbar_wait(bar_empty_k + 8 * s, phase ^ 1u);
            load_tile(sK + s * TILE_BYTES + dst_off, k_src + (u64)j * TILE_BYTES);
            cp_async_arrive_noinc(bar_full_k + 8 * s);
            mbar_wait(bar_empty_v + 8 * s, phase ^ 1u);
            load_tile(sV + s * TILE_BYTES + dst_off, v_src + (u64)j * TILE_BYTES);
            cp_async_arrive_noinc(bar_full_v + 8 * s);
        }
        cp_async_wait_all();  // never leave the CTA with copies in flight
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

    const u64 desc_k = make_desc(sK, K_LBO, K_SBO);
    const u64 desc_v = make_desc(sV, V_LBO, V_SBO);

    float o[64];
#pragma unroll
    for (int i = 0; i < 64; ++i) o[i] = 0.f;
    float m0 = __int_as_float(0xff800000), m1 = __int_as_float(0xff800000);  // running max (log2 domain)
    float l0 = 0.f, l1 = 0.f;                                                // per-thread partial row sums

    u32 qf[32];  // Q of this thread's rows as A fragments, for every S = Q K^T of the CTA
    load_q_frags(qf, Q + (head_row0 + q0 + row) * HEAD_DIM, col);

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
        issue_qk_qregs(sc, qf, desc_k);
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
        issue_qk_qregs(sc, qf, desc_k + (u64)((s * TILE_BYTES) >> 4));      // group: S_j
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
