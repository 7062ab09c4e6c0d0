// v06: a hand-written FlashAttention-3-style forward kernel for sm_90a (wgmma + a producer
// warpgroup), fp16 in, fp32 accumulation, fp16 out, head dim 128, non-causal.
//
// CTA = 3 warpgroups (384 threads), one CTA per (128-row Q block, batch*head):
//   warpgroup 0   producer: setmaxnreg.dec to PRODUCER_REGS, copies the Q tile once and then
//                 the K and V tiles of the whole sequence into STAGES-deep shared ring
//                 buffers with 16-byte cp.async, writing the 128-byte-swizzled layout that
//                 wgmma reads; completion is signalled on "full" mbarriers with
//                 cp.async.mbarrier.arrive.noinc.
//   warpgroups 1-2 consumers: setmaxnreg.inc to CONSUMER_REGS, 64 query rows each:
//                 S = Q K^T (wgmma SS, 8 x m64n128k16), online softmax in registers (exp2,
//                 scale folded into one FMA), O += P V (wgmma RS: P straight from registers,
//                 V through an MN-major descriptor), release each stage on an "empty"
//                 mbarrier; O / l written to global from registers.
//
// Shared memory (dynamic, base rounded up to 1024 B): Q 32 KB | K x STAGES | V x STAGES |
// mbarriers. Each 128 x 128 fp16 tile is stored as two 64-column halves (128 B per row):
// half h at byte h*16384, row r at r*128, 16-byte chunk c of the row at (c ^ (r % 8)) * 16.
// This is the 128-byte swizzle (CUTLASS Swizzle<3,4,3>: address bits [4:6] ^= bits [7:9]),
// which is why every tile starts on a 1024-byte boundary.
//
// INTRA_WG_OVERLAP (default 0, a second idea kept off so that v06 measures one): FA3's
// overlap inside a consumer warpgroup, Q.K^T of tile j and the softmax of tile j while P.V of
// tile j-1 is in flight. It needs S, O and P live at once (~190 registers): nvcc 13.0's
// ptxas then reports "wgmma serialized due to insufficient register resources" (C7512) and
// spills under __launch_bounds__(384, 1) (it budgets the wgmma pipeline with the 168
// registers at entry, not the 240 of setmaxnreg), while with a 255-register entry budget the
// same code builds clean at 240. The self-test times it anyway; a later version can take it up.
//
// Debug modes (DBG_MODE): 0 full attention -> O (fp16); 1 raw S = Q K^T of kv tile 0 ->
// DBG (fp32, [B*H*S, 128]); 2 O = fp16(S * sm_scale) @ V of kv tile 0 -> DBG (fp32, no
// softmax): mode 1 tests the SS descriptors, mode 2 the register-A fragment and the V
// descriptor independently of the softmax.
//
// PTX ISA facts this file relies on (sections of the PTX ISA for wgmma / mbarrier):
//  * 9.7.15.5.1.2 "Matrix Descriptor Format": 64-bit descriptor, bits 0-13 start address
//    >> 4, bits 16-29 leading-dimension byte offset >> 4, bits 32-45 stride-dimension byte
//    offset >> 4, bits 49-51 base offset (0: our tiles are 1024-aligned), bits 62-63 swizzle
//    mode (0 none, 1 128B, 2 64B, 3 32B).
//  * 9.7.15.5.1.2 "Shared Memory Matrix Layout" + CUTLASS make_gmma_desc: for K-major
//    128B-swizzled operands the SBO is the stride between 8-row core-matrix groups (1024 B
//    here) and the LBO is unused (CUTLASS writes 1, i.e. 16 B); moving 16 elements along K
//    inside a 128-byte swizzle row = adding 32 B to the start address. For MN-major
//    128B-swizzled operands ((8,n),(8,k)) : ((1,LBO),(8,SBO)) in 16-byte units: the LBO is
//    the stride between 64-element MN chunks (our two d-halves, 16384 B), the SBO the stride
//    between 8-row K groups (1024 B). The tcgen05 table for MN-major swizzled layouts says
//    the same ("LBO: stride from the first swizzle-byte-size/16 rows to the next"), and so
//    does ThunderKittens' descriptor for MN-major 128B-swizzled tiles stored as 64-column
//    blocks (LBO = rows * 128 B = 16384 for 128 rows, SBO = 1024).
//  * imm-trans-b = 1 selects the N-major (transposed) B layout, allowed for .f16.
//  * 9.7.15.5.1.1 "Register Fragments" (CUTLASS CLayout_64xN / ALayout_64x16): the f32
//    accumulator of m64nNk16: thread t of the warpgroup, warp w = t/32, g = lane/4,
//    c = lane%4 holds d[4j+0..1] = (row 16w+g, cols 8j+2c, 8j+2c+1), d[4j+2..3] = (row
//    16w+g+8, same cols). The f16 A fragment of m64n*k16 is the same map for a 64x16 tile:
//    a0a1 (g, 2c..), a2a3 (g+8, 2c..), a4a5 (g, 8+2c..), a6a7 (g+8, 8+2c..). So the S
//    accumulator columns 16kc..16kc+15 packed pairwise to f16x2 ARE the A registers of
//    k-chunk kc of the second product: {pack(d[8kc..8kc+1]), pack(d[8kc+2..3]),
//    pack(d[8kc+4..5]), pack(d[8kc+6..7])}.
//  * wgmma.fence before the first wgmma and whenever the accumulator / A registers were
//    touched by other instructions; wgmma.commit_group + wgmma.wait_group N (all warps of
//    the warpgroup, .sync.aligned).
//  * mbarrier.try_wait.parity P returns true once the phase of parity P has completed; right
//    after init the phase is 0, so waiting on parity 1 returns at once (producer's first
//    pass over the empty barriers). Default semantics: arrive = release, try_wait = acquire
//    (.cta).
//  * cp.async.mbarrier.arrive.noinc: an arrive-on is triggered when all prior cp.async of
//    the executing thread complete, without first incrementing the pending count, so the
//    init count must include these arrivals: full barriers are initialised with 128 (the
//    producer's threads), empty barriers with 8 (lane 0 of each consumer warp).
//  * setmaxnreg.{inc,dec}.sync.aligned.u32 N: per-warpgroup register budget, N in 24..256,
//    multiple of 8; ptxas honours it only when the register count at entry is known
//    (__launch_bounds__ with a minimum of 1 block per SM, else warning C7508); the .inc
//    side waits for registers released by a .dec (see the check below).
//  * fence.proxy.async.shared::cta: cp.async writes shared memory through the generic
//    proxy and wgmma reads it through the async proxy; each consumer thread fences after
//    its acquire on the full barrier (PROXY_FENCE, cheap: once per tile).

#ifndef DBG_MODE
#define DBG_MODE 0
#endif
#if DBG_MODE < 0 || DBG_MODE > 2
#error "DBG_MODE must be 0, 1 or 2"
#endif
#ifndef HANG_TRAP
#define HANG_TRAP 1              // a wait longer than HANG_NS traps instead of hanging
#endif
#ifndef INTRA_WG_OVERLAP
#define INTRA_WG_OVERLAP 0       // second idea, off: FA3's overlap of Q.K^T(j) + softmax(j) with P.V(j-1)
#endif
#include "attn_sm90_config.cuh"
#include "common/sm90/ptx.cuh"
#include "common/sm90/mbarrier.cuh"
#include "common/sm90/cp_async.cuh"
#include "common/sm90/wgmma.cuh"
#include "attn_sm90.cuh"
#include "attn_sm90_cta.cuh"
#include "attn_sm90_wgmma.cuh"

// --------------------------------------------------------------------------- kernel
//
// The set-up (shared memory, barriers, a consumer thread's place) is attn_sm90_cta.cuh's; the
// producer's copies and the consumer steps are in attn_sm90_wgmma.cuh (v07 builds on them).

extern "C" __global__ void __launch_bounds__(THREADS, 1)
attn_fwd_wgmma(const u16* __restrict__ Q, const u16* __restrict__ K, const u16* __restrict__ V, u16* __restrict__ O,
               float* __restrict__ DBG, int seqlen, float scale_log2, float sm_scale)
{
    extern __shared__ __align__(1024) unsigned char smem_raw[];
    const auto [sQ, sK, sV, bars] = smem_tiles(smem_raw, 1);  // Q | K x STAGES | V x STAGES | barriers
    const u32 bar_q = bars;
    const auto [bar_full_k, bar_full_v, bar_empty_k, bar_empty_v] = ring_bars(bars + 8);  // + 8 * s

    const int n_tiles = DBG_MODE ? 1 : seqlen / BLOCK_N;
    const u64 head_row0 = (u64)blockIdx.y * (u64)seqlen;  // first row of this (batch, head)
    const int q0 = blockIdx.x * BLOCK_M;

    if (threadIdx.x == 0) {
        mbar_init(bar_q, 128);
        init_ring_bars(bar_full_k, bar_full_v, bar_empty_k, bar_empty_v, 128, 8);  // the producer's threads, the consumer warps
        asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    }
    __syncthreads();

    const int wg = __shfl_sync(0xffffffffu, (int)(threadIdx.x / 128), 0);

    if (wg == 0) {
        // ------------------------------------------------------------------- producer
        asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;" ::"n"(PRODUCER_REGS));
        produce_cp_async_trap(threadIdx.x, Q, K, V, sQ, sK, sV, bar_q, bar_full_k, bar_full_v, bar_empty_k, bar_empty_v,
                              head_row0, q0, n_tiles);
        return;
    }

    // ----------------------------------------------------------------------- consumers
    asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;" ::"n"(CONSUMER_REGS));
    const int cw = wg - 1;                 // consumer warpgroup 0/1: query rows 64*cw .. 64*cw+63
    const auto [tid, lane, row, col] = consumer_thread(cw);
    // Q of this warpgroup: rows 64*cw.. of both halves; + 32 B per k16 step, + HALF_BYTES for d >= 64
    const u64 desc_q = make_desc(sQ + cw * 64 * 128, K_LBO, K_SBO);
    const u64 desc_k = make_desc(sK, K_LBO, K_SBO);
    const u64 desc_v = make_desc(sV, V_LBO, V_SBO);

#if DBG_MODE != 1
    float o[64], m0, m1, l0, l1;  // the softmax state is unused without the softmax (DBG_MODE 2)
    start_rows(o, m0, m1, l0, l1);
#endif

    mbar_wait_trap(bar_q, 0);
    proxy_fence_async();

#if INTRA_WG_OVERLAP && DBG_MODE == 0
    // FlashAttention-3's intra-warpgroup overlap: Q.K^T of tile j is issued before P.V of
    // tile j-1, and the softmax of tile j (in place, fp32) runs while P.V of tile j-1 is still
    // in flight; P is packed only after that product completed, so no register read by an
    // in-flight wgmma is written.
#define OVERLAP_TAKE_TURN()  // no turns in v06
#define OVERLAP_PASS_TURN()
#define OVERLAP_PASS_LAST_TURN()
#endif
#include "attn_sm90_wgmma_overlapped.cuh"  // the overlapped schedule where the hooks are defined, else nothing
#if !(INTRA_WG_OVERLAP && DBG_MODE == 0)
    for (int j = 0; j < n_tiles; ++j) {
        const int s = j % STAGES;
        const u32 phase = (u32)(j / STAGES) & 1u;

        // ---- S = Q K^T (64 x 128, fp32)
        mbar_wait_trap(bar_full_k + 8 * s, phase);
        proxy_fence_async();
        float sc[64];
        wgmma_fence();
        issue_qk(sc, desc_q, desc_k + (u64)((s * TILE_BYTES) >> 4));
        wgmma_commit();
        wgmma_wait<0>();
        fence_acc(sc);
        if (lane == 0) mbar_arrive(bar_empty_k + 8 * s);

#if DBG_MODE == 1
        {
            float* d0 = DBG + (head_row0 + q0 + row) * HEAD_DIM + col;
            float* d1 = d0 + 8 * HEAD_DIM;
#pragma unroll
            for (int jj = 0; jj < 16; ++jj) {
                st_global_f32x2(d0 + 8 * jj, sc[4 * jj], sc[4 * jj + 1]);
                st_global_f32x2(d1 + 8 * jj, sc[4 * jj + 2], sc[4 * jj + 3]);
            }
            mbar_wait_trap(bar_full_v + 8 * s, phase);  // let the producer's last arrive land first
            return;
        }
#else
        u32 p[32];  // P as the A fragments of the second product: k-chunk kc = p[4kc .. 4kc+3]
#if DBG_MODE == 2
        pack_p(sc, p, sm_scale);  // no softmax: P = fp16(S / sqrt(D))
#else
        float alpha0, alpha1;
        softmax_tile(sc, m0, m1, l0, l1, alpha0, alpha1, scale_log2);
        rescale_o(o, alpha0, alpha1);
        pack_p(sc, p, 1.f);
#endif

        // ---- O += P V (P from registers, V N-major in shared memory): wait, issue, wait, release the slot
        pv_step_trap(o, p, desc_v, bar_full_v, bar_empty_v, lane, s, phase);
#endif  // DBG_MODE != 1
    }
#endif  // INTRA_WG_OVERLAP

#if DBG_MODE == 2
    {
        float* d0 = DBG + (head_row0 + q0 + row) * HEAD_DIM + col;
        float* d1 = d0 + 8 * HEAD_DIM;
#pragma unroll
        for (int jj = 0; jj < 16; ++jj) {
            st_global_f32x2(d0 + 8 * jj, o[4 * jj], o[4 * jj + 1]);
            st_global_f32x2(d1 + 8 * jj, o[4 * jj + 2], o[4 * jj + 3]);
        }
    }
#elif DBG_MODE == 0
    // ---- epilogue: O / l, fp16, straight from registers
    sum_row_partials(l0, l1);
    store_o_pairs(o, 1.f / l0, 1.f / l1, O + (head_row0 + q0 + row) * HEAD_DIM + col, lane);
#endif
}
