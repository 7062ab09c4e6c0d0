// v08: v05's persistent grid and bin-major counting, fed by the SM's copy engine: each block's
// 128-byte strip of every row comes into shared memory by one-dimensional bulk copies
// (cp.async.bulk, common/sm90/bulk.cuh), ROWS rows a stage, STAGES stages in flight, each
// completing on its own mbarrier; the threads count out of shared memory.
//
// v05 keeps UNROLL words a thread in flight in registers (32 KB an SM at 1024 x 8) and issues
// every 4-byte load itself. Here warp 0 issues one 128-byte copy a row (a lane a row, 32 rows an
// instruction) and the block keeps STAGES x ROWS x 128 bytes in flight (96 KB at 3 x 256), three
// times v05's, with no register holding them.
//
// The block (grid and rows: v05's, block b counting group b % groups over chunk b / groups):
//   zero the histogram, arm the stages' mbarriers, warp 0 issues stages 0 .. STAGES-1;
//   for each batch of ROWS rows: wait for its stage, each warp counts rows warp, warp + WARPS, ...
//   of it (lane l reads the word of channels 4l .. 4l+3 and counts its 4 bytes: count4, v04's
//   layout), a barrier (everyone is done with the stage), warp 0 issues the batch STAGES on;
//   then v05's flush (flush_bin_major) into the zeroed output, its tiles in the ring's memory.
// The last batch of a block may hold fewer rows: its copies and its expected bytes are those rows'.
// A strip is min(128, channels - 128·group) bytes; the host checks channels % 16 == 0 and a
// 16-byte aligned input, which the copies need.
//
//   THREADS   threads per block, 1024 unless defined
//   ROWS      rows a stage, 256 unless defined (32 KB of 128-byte strips)
//   STAGES    stages in flight, 3 unless defined (the histogram takes 128 KB of the 227 KB)

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

// grid: groups * chunks blocks (block b: group b % groups, chunk b / groups)
extern "C" __global__ void __launch_bounds__(THREADS, 1)
histogram_bulk_strips(const u8* __restrict__ data, u32* __restrict__ out, u32 length, u32 channels, u32 groups,
                      u32 chunks)
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
    const u8* src = data + group * GROUP + (u64)row_begin * channels;

    zero_hist(hist);
    if (threadIdx.x == 0) {
#pragma unroll
        for (u32 s = 0; s < STAGES; ++s) mbar_init(bars + 8 * s, 1);
        fence_mbarrier_init();
    }
    __syncthreads();

    // batch b's rows into its stage (warp 0): lane 0 arms the stage's mbarrier for their bytes
    auto issue = [&](u32 b) {
        const u32 n = min((u32)ROWS, rows - b * ROWS);
        const u32 s = b % STAGES;
        if (lane == 0) mbar_arrive_expect_tx(bars + 8 * s, n * strip);
        __syncwarp();
        const u32 dst = smem_u32(ring + s * STAGE_BYTES);
        for (u32 r = lane; r < n; r += 32)
            bulk_load(dst + r * GROUP, src + (u64)(b * ROWS + r) * channels, strip, bars + 8 * s);
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
