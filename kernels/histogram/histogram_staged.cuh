// v08's and v09's block: v05's persistent grid and bin-major counting, fed through a ring of STAGES
// shared-memory stages of ROWS rows of the block's 128-byte strip, each completing on its own mbarrier;
// the threads count out of shared memory. How a stage is filled is the version's (the hook `fill`).
//
// The block (grid and rows: v05's, block b counting group b % groups over chunk b / groups):
//   zero the histogram, arm nothing yet, warp 0 fills stages 0 .. STAGES-1;
//   for each batch of ROWS rows: wait for its stage, each warp counts rows warp, warp + WARPS, ...
//   of it (lane l reads the word of channels 4l .. 4l+3 and counts its 4 bytes: count4, v04's
//   layout), a barrier (everyone is done with the stage), warp 0 fills it with the batch STAGES on;
//   then v05's flush (flush_bin_major) into the zeroed output, its tiles in the ring's memory.
// The last batch of a block may hold fewer rows: only those are counted. A strip is
// min(128, channels - 128·group) bytes of a row, at the row's byte group·128.
//
// fill(b, n, dst, bar, strip), called by the 32 lanes of warp 0: batch b (n rows, the last batch
// fewer) into the stage at shared address dst, arming the mbarrier at bar (count 1) with the bytes
// the copies will complete on it.
//
//   THREADS   threads per block, 1024 unless defined
//   ROWS      rows a stage, 256 unless defined (32 KB of 128-byte strips)
//   STAGES    stages in flight, 3 unless defined (the histogram takes 128 KB of the 227 KB)
#pragma once

#ifndef THREADS
#define THREADS 1024
#endif
#ifndef ROWS
#define ROWS 256
#endif
#ifndef STAGES
#define STAGES 3
#endif
#define WARPS (THREADS / 32)

#include "histogram_bin_major.cuh"
#include "common/sm90/bulk.cuh"
#include "common/sm90/mbarrier.cuh"

#define STAGE_BYTES (ROWS * GROUP)
#define RING_BYTES (STAGES * STAGE_BYTES)

static_assert(ROWS % WARPS == 0, "a whole stage gives every warp the same rows");
static_assert(RING_BYTES >= WARPS * TILE_WORDS * 4, "the flush tiles fit in the ring once the counting is done");
static_assert(HIST_WORDS * 4 + RING_BYTES + STAGES * 8 <= 227 * 1024, "histogram, ring and mbarriers in shared memory");

template <typename Fill>
__device__ __forceinline__ void staged_block(u32* __restrict__ out, u32 length, u32 channels, u32 groups, u32 chunks,
                                             Fill fill)
{
    extern __shared__ __align__(128) u32 smem[];
    u32* hist = smem;
    u8* ring = reinterpret_cast<u8*>(smem + HIST_WORDS);
    const u32 bars = smem_u32(ring + RING_BYTES);  // STAGES mbarriers, 8 bytes each

    const u32 lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const u32 group = blockIdx.x % groups, chunk = blockIdx.x / groups;
    const u32 row_begin = (u32)(((u64)chunk * length) / chunks);
    const u32 row_end = (u32)(((u64)(chunk + 1) * length) / chunks);
    const u32 rows = row_end - row_begin;
    const u32 batches = (rows + ROWS - 1) / ROWS;
    const u32 strip = min((u32)GROUP, channels - group * GROUP);  // bytes of a row this block counts

    zero_hist(hist);
    if (threadIdx.x == 0) {
#pragma unroll
        for (u32 s = 0; s < STAGES; ++s) mbar_init(bars + 8 * s, 1);
        fence_mbarrier_init();
    }
    __syncthreads();

    auto issue = [&](u32 b) {  // warp 0
        const u32 s = b % STAGES;
        fill(b, min((u32)ROWS, rows - b * ROWS), smem_u32(ring + s * STAGE_BYTES), bars + 8 * s, strip);
    };
    if (warp == 0)
        for (u32 b = 0; b < STAGES && b < batches; ++b) issue(b);

    const u32 lane_base = smem_u32(hist) + lane * LANE_BYTES;
    const bool counts = group * GROUP + lane * 4 < channels;  // channels % 4 == 0: a lane's 4 are all in or out
    for (u32 b = 0; b < batches; ++b) {
        const u32 s = b % STAGES;
        mbar_wait(bars + 8 * s, (b / STAGES) & 1);
        const u32 n = min((u32)ROWS, rows - b * ROWS);
        const u32* words = reinterpret_cast<const u32*>(ring + s * STAGE_BYTES) + lane;
        if (counts && n == ROWS) {  // a whole stage: ROWS / WARPS rows a warp, unrolled
#pragma unroll
            for (u32 i = 0; i < ROWS / WARPS; ++i) count4(lane_base, words[(warp + i * WARPS) * (GROUP / 4)]);
        } else if (counts) {
            for (u32 r = warp; r < n; r += WARPS) count4(lane_base, words[r * (GROUP / 4)]);
        }
        __syncthreads();  // every warp is done with stage s
        if (warp == 0 && b + STAGES < batches) issue(b + STAGES);
    }

    // every copy has landed and been counted: the ring's memory holds the flush tiles now
    u32* tile = reinterpret_cast<u32*>(ring) + warp * TILE_WORDS;
    flush_bin_major(hist, tile, out, group, channels, lane, warp);
}
