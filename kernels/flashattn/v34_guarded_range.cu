// v34: v32 (v21's persistent kernel with v31's step) with a rare path that keeps every finite value.
// v31's rare path scaled the exp2 values and the lanes' partial sums by alpha; a partial sum overflows
// before any value does, and alpha flushes to 0 once the max moves by 126 log2 units, so a row whose
// scores rose that far in one tile came out as zeros or NaN. Here the rare path takes the values again
// in the log2 domain and their sums again (attn_sm90_guard_logs.cuh); the common path is v31's.
// Everything else is v32's.

#ifndef BLOCK_N
#define BLOCK_N 128  // v21's tiles (attn_sm90_kv176.cuh, included first for the step, would default to 176)
#endif
#include "common/sm90/ptx.cuh"

__device__ __forceinline__ void store_o_staged(const float (&o)[64], float inv0, float inv1, u16* o0, int lane);

#define STORE_O store_o_staged
#define DQ_STEP consumer_step_guard_logs
#include "attn_sm90_kv176.cuh"
#include "attn_sm90_guard_logs.cuh"
#include "attn_sm90_double_q.cuh"

#include "attn_sm90_staged_store.cuh"
