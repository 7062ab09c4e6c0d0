// v36's kernel build, shared by the versions that build it (v36, and v37 with DQ_DEFER_EPILOGUE 1 defined
// first): v19's persistent kernel (attn_sm90_double_q.cuh) with v34's guarded step as DQ_STEP, v35's store
// warps writing each staged O block with v36's two TMA stores (attn_sm90_store_warps.cuh), and O's tensor
// map as the kernel's extra parameter. What each piece does and why is in v35_store_warps.cu and
// v36_store_tma.cu.
//
// Append-only: once a recorded version builds it, it is never changed in place (`report same-code`).
#pragma once

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
#include "attn_sm90_kv176.cuh"
#include "attn_sm90_guard_logs.cuh"
#include "attn_sm90_double_q.cuh"

#include "attn_sm90_staged_store.cuh"
#include "attn_sm90_store_warps.cuh"
