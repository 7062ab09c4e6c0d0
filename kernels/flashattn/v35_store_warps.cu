// v35: v34 with the epilogue's copy to global memory taken off the consumers. In v21's epilogue (v34's),
// each consumer warpgroup stages its 64 x 128 block of O / l in shared memory with eight stmatrix.x4,
// meets its 128 threads on a named barrier and copies the block out itself, eight ld.shared.v4 and
// eight st.global.v4 a thread; until its last store has issued it cannot start the next unit's first S,
// and the other consumer alone cannot keep the tensor cores busy that long.
//
// Here the producer warpgroup's warps 2 and 3, idle in every kernel since v13, copy the blocks out:
// warp 2 + cw for consumer cw. The consumer waits until its buffer is free (the store warp has read
// the previous block out), stages the block as v21 does, arrives on a named barrier and goes on; the
// store warp waits on that barrier, copies the 16 KB (a warp instruction covers two whole 256-byte
// rows) and arrives on the other one. attn_sm90_store_warps.cuh holds both halves; the kernel is
// v19's (attn_sm90_double_q.cuh) with its DQ_STORE_WARPS hook, and everything else is v34's.
//
// Shared memory: v21's (the staging buffers are its own).

#ifndef BLOCK_N
#define BLOCK_N 128  // v21's tiles (attn_sm90_kv176.cuh, included first for the step, would default to 176)
#endif
#include "common/sm90/ptx.cuh"

__device__ __forceinline__ void store_o_handoff(const float (&o)[64], float inv0, float inv1, u16*, int lane);
__device__ __forceinline__ void store_warps(u16* O, int seqlen, int units_per_head, int n_units, int cluster_id,
                                            int n_clusters, u32 rank);

#define STORE_O store_o_handoff
#define DQ_STORE_WARPS store_warps
#define DQ_STEP consumer_step_guard_logs
#include "attn_sm90_kv176.cuh"
#include "attn_sm90_guard_logs.cuh"
#include "attn_sm90_double_q.cuh"

#include "attn_sm90_staged_store.cuh"
#include "attn_sm90_store_warps.cuh"
