// v32: v21 (v19's persistent kernel with two Q buffers and v21's staged epilogue, on 128-row K/V tiles)
// with v31's step: the exp2 values of each step after a unit's first taken against the running max at
// once, the row sums as the guard (attn_sm90_sum_guard.cuh). The unit's first step keeps v15's softmax,
// which sets the unit's first max. Everything else is v21's.

#ifndef BLOCK_N
#define BLOCK_N 128  // v21's tiles (attn_sm90_kv176.cuh, included first for v31's step, would default to 176)
#endif
#include "common/sm90/ptx.cuh"

__device__ __forceinline__ void store_o_staged(const float (&o)[64], float inv0, float inv1, u16* o0, int lane);

#define STORE_O store_o_staged
#define DQ_STEP consumer_step_sum_guard
#include "attn_sm90_kv176.cuh"
#include "attn_sm90_sum_guard.cuh"
#include "attn_sm90_double_q.cuh"

#include "attn_sm90_staged_store.cuh"
