// v37: v36 with each unit's epilogue moved under the next unit's first S.
//
// In v36 a consumer's unit ends with its last P.V, which it waits for, then its epilogue (the row sums
// reduced, O / l staged for the store warp), then the next unit's first S: issued, waited for, and its
// softmax. The epilogue and that softmax are the consumer's own work between two of its turns on the tensor
// cores, and at the unit boundary the other consumer's P.V alone does not cover both.
//
// Here a consumer issues the next unit's first S as soon as its turn comes after the last P.V, and stages
// the previous unit's O while that S is on the tensor cores; O and the row sums live across units for that
// (v19's kernel, attn_sm90_double_q.cuh, with DQ_DEFER_EPILOGUE 1). The last unit's epilogue runs after
// the loop. Everything else is v36's: the step, the store warps and their TMA stores, the launch.

#ifndef BLOCK_N
#define BLOCK_N 128  // v21's tiles (attn_sm90_kv176.cuh, included first for the step, would default to 176)
#endif
#include "common/sm90/ptx.cuh"
#include "common/sm90/tma.cuh"

__device__ __forceinline__ void store_o_handoff_boxes(const float (&o)[64], float inv0, float inv1, u16*, int lane);
__device__ __forceinline__ void store_warps_tma(const TmaDesc* o_map, u16* O, int seqlen, int units_per_head,
                                                int n_units, int cluster_id, int n_clusters, u32 rank);

#define STORE_O store_o_handoff_boxes
#define DQ_EXTRA_PARAMS , const __grid_constant__ TmaDesc tm_o
#define DQ_STORE_WARPS(...) store_warps_tma(&tm_o, __VA_ARGS__)
#define DQ_STEP consumer_step_guard_logs
#define DQ_DEFER_EPILOGUE 1
#include "attn_sm90_kv176.cuh"
#include "attn_sm90_guard_logs.cuh"
#include "attn_sm90_double_q.cuh"

#include "attn_sm90_staged_store.cuh"
#include "attn_sm90_store_warps.cuh"
