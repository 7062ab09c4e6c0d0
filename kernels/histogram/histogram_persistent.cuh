// v05's persistent grid (what and why: v05_persistent.cu): groups x chunks blocks, one per SM,
// block b counting channel group b % groups over chunk b / groups of the rows (count_slice in
// histogram.cuh) into v04's bin-major histogram (histogram_bin_major.cuh), the next batch of rows
// loaded while the current one is counted. v05 and v06 build it, each with its own flush: the
// hook of persistent_block.
//
//   THREADS   threads per block, 1024 unless defined
//   UNROLL    rows per thread per batch, 8 unless defined
//
// Changed in place only with the PTX of every build of every version that includes it unchanged
// (tools/same_ptx.py; `report same-code` proves it for the recorded runs).
#pragma once

#ifndef THREADS
#define THREADS 1024
#endif
#ifndef UNROLL
#define UNROLL 8                        // rows per thread per batch
#endif
#define WARPS (THREADS / 32)

#include "histogram_bin_major.cuh"
#include "histogram_trace.cuh"

// The block's share of the rows counted into its histogram in dynamic shared memory, then
// flush(hist, tile, group, lane, warp) called with the histogram, this warp's flush tile, the
// block's channel group and the thread's lane and warp. Every thread of the block must call it.
template <typename Flush>
__device__ __forceinline__ void persistent_block(const u8* __restrict__ data, u32 length, u32 channels, u32 groups,
                                                 u32 chunks, Flush flush)
{
    extern __shared__ __align__(16) u32 smem[];
    u32* hist = smem;
    u32* tile = smem + HIST_WORDS + (threadIdx.x >> 5) * TILE_WORDS;

    TRACE_ENTRY();
    count_slice(hist, data, length, channels, groups, chunks);
    TRACE_COUNTED();

    const u32 lane = threadIdx.x & 31;
    const u32 warp = threadIdx.x >> 5;
    const u32 group = blockIdx.x % groups;
    flush(hist, tile, group, lane, warp);
    TRACE_FLUSHED();
}
