// v35's epilogue: a consumer warpgroup stages its O / l block in shared memory (v21's stmatrix into
// v21's swizzled buffer) and hands it to a warp of the producer warpgroup, which writes it out to
// global memory while the consumer goes on to its next unit. What it does and why is in
// v35_store_warps.cu.
//
// The hand-off uses two named barriers per consumer warpgroup cw, each of its 128 threads and the 32
// of producer warp 2 + cw: STORE_FULL_BAR0 + cw (the consumer arrives once its block is staged, the
// store warp waits) and STORE_FREE_BAR0 + cw (the store warp arrives once it has read the buffer, the
// consumer waits before staging its next block; the store warp's first arrive stands for the empty
// buffer at the start). Include it after attn_sm90_staged_store.cuh (its buffer, layout and stage_o_at).
//
// v35 stages in v21's layout and its store warps copy the block out with ld.shared / st.global; v36
// stages in the layout of two TMA boxes and its store warps write each box with one TMA store.
//
// Append-only: once a recorded version builds it, a helper here is never changed in place (`report
// same-code` proves that a version's kernel still compiles to the machine code its records ran).
#pragma once

#include "common/sm90/bulk.cuh"
#include "common/sm90/tma_store.cuh"

#define STORE_FULL_BAR0 5  // named barriers 5-6: consumer cw's block is staged
#define STORE_FREE_BAR0 7  // named barriers 7-8: consumer cw's buffer has been read out
#define STORE_BAR_THREADS 160  // a consumer warpgroup and one store warp

// The consumer's half of the epilogue (STORE_O) in layout AT: wait for the buffer, stage the block,
// (with ASYNC, order the writes before the store warp's TMA stores) and arrive. o0 (the block's place
// in O) is the store warp's to find from the unit.
template <u32 (*AT)(int, int), bool ASYNC>
__device__ __forceinline__ void store_o_handoff_at(const float (&o)[64], float inv0, float inv1, int lane)
{
    const int cw = (int)(threadIdx.x / 128), warp = (int)(threadIdx.x & 127) >> 5;
    asm volatile("bar.sync %0, %1;" ::"r"(STORE_FREE_BAR0 + cw), "n"(STORE_BAR_THREADS) : "memory");
    stage_o_at<AT>(o, inv0, inv1, stage_buffer(cw), warp, lane);
    if (ASYNC) fence_proxy_async_shared();
    asm volatile("bar.arrive %0, %1;" ::"r"(STORE_FULL_BAR0 + cw), "n"(STORE_BAR_THREADS) : "memory");
}

// v35's STORE_O: v21's layout
__device__ __forceinline__ void store_o_handoff(const float (&o)[64], float inv0, float inv1, u16*, int lane)
{
    store_o_handoff_at<stage_at, false>(o, inv0, inv1, lane);
}

// The store warps' loop (DQ_STORE_WARPS): producer warps 2 and 3 (idle in produce_units) write consumer
// 0's and consumer 1's blocks, unit by unit in the consumers' order, each with COPY(stage, O, row0, lane,
// o_map): row0 is the block's first row of O viewed as [heads x seqlen, HEAD_DIM]. COPY returns once the
// buffer has been read. The other producer warps return at once.
template <void (*COPY)(u32, u16*, u64, int, const TmaDesc*)>
__device__ __forceinline__ void store_warps_with(const TmaDesc* o_map, u16* O, int seqlen, int units_per_head,
                                                 int n_units, int cluster_id, int n_clusters, u32 rank)
{
    const int pw = (int)(threadIdx.x % 128) / 32;
    if (pw < 2 || cluster_id >= n_units) return;
    const int cw = pw - 2, lane = (int)(threadIdx.x & 31);
    const u32 stage = stage_buffer(cw);
    asm volatile("bar.arrive %0, %1;" ::"r"(STORE_FREE_BAR0 + cw), "n"(STORE_BAR_THREADS) : "memory");
    for (int w = cluster_id; w < n_units; w += n_clusters) {
        const int head = w / units_per_head;
        const int q0 = ((w % units_per_head) * CLUSTER + (int)rank) * BLOCK_M;
        asm volatile("bar.sync %0, %1;" ::"r"(STORE_FULL_BAR0 + cw), "n"(STORE_BAR_THREADS) : "memory");
        COPY(stage, O, (u64)head * (u64)seqlen + q0 + cw * 64, lane, o_map);
        // the buffer is read: the consumer may stage its next block
        if (w + n_clusters < n_units)
            asm volatile("bar.arrive %0, %1;" ::"r"(STORE_FREE_BAR0 + cw), "n"(STORE_BAR_THREADS) : "memory");
    }
#if TRACE
    // the CTA's last stores issued: slot 5 (warp 2) and 6 (warp 3), %globaltimer like the exit's slot 2
    if (lane == 0 && blockIdx.x < TRACE_MAX_CTAS) g_trace[blockIdx.x * TRACE_SLOTS + 5 + cw] = trace_ns();
#endif
}

// v35's COPY: the block in v21's layout, two whole 256-byte rows a warp instruction (rows r0 + 0-1, lanes
// 0-15 and 16-31 at 16-byte chunk lane % 16), then rows r0 + 2-3. Written as two loads, then two stores;
// within the producer warpgroup's 24 registers the compiler keeps one load in flight at a time. Every
// load's value has been stored when it returns.
__device__ __forceinline__ void copy_rows(u32 stage, u16* O, u64 row0, int lane, const TmaDesc*)
{
    u16* block = O + row0 * HEAD_DIM;
#pragma unroll 1
    for (int r0 = 0; r0 < 64; r0 += 4) {
        const int r = r0 + (lane >> 4), c = lane & 15;
        u32 a0, b0, x0, y0, a1, b1, x1, y1;
        ld_shared_v4(stage + stage_at(r, c), a0, b0, x0, y0);
        ld_shared_v4(stage + stage_at(r + 2, c), a1, b1, x1, y1);
        st_global_v4(block + r * HEAD_DIM + 8 * c, a0, b0, x0, y0);
        st_global_v4(block + (r + 2) * HEAD_DIM + 8 * c, a1, b1, x1, y1);
    }
}

// v35's DQ_STORE_WARPS
__device__ __forceinline__ void store_warps(u16* O, int seqlen, int units_per_head, int n_units, int cluster_id,
                                            int n_clusters, u32 rank)
{
    store_warps_with<copy_rows>(nullptr, O, seqlen, units_per_head, n_units, cluster_id, n_clusters, rank);
}

// ------------------------------------------------------------------------------------------------ v36

// v36's layout: the block as two TMA boxes of 64 rows x 64 columns (128-byte rows), columns 0-63 then
// 64-127, each in the 128-byte swizzle the tensor map names (chunk c of a row at c ^ (row % 8)): the
// eight rows of a stmatrix matrix still fall on eight different chunks
__device__ __forceinline__ u32 stage_at_boxes(int r, int chunk)
{
    return (u32)((chunk >> 3) * (64 * 128) + r * 128 + (((chunk & 7) ^ (r & 7)) << 4));
}

// v36's STORE_O: the boxes' layout, the writes fenced for the TMA
__device__ __forceinline__ void store_o_handoff_boxes(const float (&o)[64], float inv0, float inv1, u16*, int lane)
{
    store_o_handoff_at<stage_at_boxes, true>(o, inv0, inv1, lane);
}

// v36's COPY: lane 0 writes the two boxes with TMA stores (o_map: O as [heads x seqlen, HEAD_DIM], boxes
// of 64 x 64, 128-byte swizzle) and waits until they have read the buffer
__device__ __forceinline__ void copy_boxes(u32 stage, u16*, u64 row0, int lane, const TmaDesc* o_map)
{
    if (lane == 0) {
        tma_store_box_2d(o_map, stage, 0, (int)row0);
        tma_store_box_2d(o_map, stage + 64 * 128, 64, (int)row0);
        bulk_commit();
        bulk_wait_read<0>();
    }
    __syncwarp();
}

// v36's DQ_STORE_WARPS, given O's tensor map (the kernel's extra parameter)
__device__ __forceinline__ void store_warps_tma(const TmaDesc* o_map, u16* O, int seqlen, int units_per_head,
                                                int n_units, int cluster_id, int n_clusters, u32 rank)
{
    store_warps_with<copy_boxes>(o_map, O, seqlen, units_per_head, n_units, cluster_id, n_clusters, rank);
}
