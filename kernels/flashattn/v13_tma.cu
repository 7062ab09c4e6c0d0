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
// v08's: its kernel, attn_sm90_overlap.cuh, with the TMA producer (produce_tma, in
// attn_sm90_tma_producer.cuh, which v14 builds on) in the producer hook.

#ifndef PROXY_FENCE
#define PROXY_FENCE 0            // 1: v08's fence.proxy.async after each full-barrier wait (not needed with TMA)
#endif
#define OVL_KERNEL attn_fwd_tma
#define OVL_INPUTS const __grid_constant__ TmaDesc tm_q, const __grid_constant__ TmaDesc tm_k, \
                   const __grid_constant__ TmaDesc tm_v
#define FULL_ARRIVALS 1          // full barriers: the producer's one arrive.expect_tx, then the bytes
// warps 1-3 of the producer warpgroup have nothing to do; the copies still in flight complete on
// barriers the consumers wait for
#define OVL_PRODUCER() \
    if (threadIdx.x % 128 < 32) produce_tma<TmaTile>(&tm_q, &tm_k, &tm_v, OVL_RING)
#include "attn_sm90_tma_producer.cuh"
#include "attn_sm90_overlap.cuh"
