// v04: v03 with the shared-memory histogram stored bin-major, so that every lane of a warp
// owns its own bank whatever the data: conflict-free shared atomics, even in the contention
// case.
//
// Shared memory has 32 banks of 4 bytes; a warp's accesses that fall in one bank (at
// different addresses) are served one after another. In v03 the counter of (channel c,
// value b) sits at c*256 + b, in bank b % 32: the bank depends on the data. Here it sits at
// b*128 + j*32 + l for channel 4l + j (lane l, byte j of its word), in bank l: for each of
// the 4 atomics a thread issues per word, the 32 lanes touch 32 different channels in 32
// different banks, so each warp-wide atomic is one shared-memory wavefront. Loads and
// instruction count are v03's (one PRMT and one IMAD per value).
//
// The price is paid once, in the flush: the output is channel-major, so consecutive output
// counters (one channel, consecutive values) sit in one bank here. The flush therefore
// transposes through a small padded tile per warp (8 values x 32 channels, row pitch 9
// words): 8 conflict-free reads of 32 channels, then reads of the tile in which 8
// consecutive lanes hold 8 consecutive values of one channel, so each warp-wide global
// atomicAdd covers 4 full 32-byte sectors instead of 32 scattered words.
//
// The layout (the counters' strides LANE_BYTES, J_BYTES, VALUE_SHIFT and the flush tile) is
// histogram_bin_major.cuh, which v05 and v06 count in too; the flush is flush_bin_major in
// histogram.cuh. This file keeps v03's threads and batches and is the kernel.

#define THREADS 1024
#define WARPS (THREADS / 32)
#define BATCH 4                         // rows loaded per thread before counting

#include "histogram_bin_major.cuh"

extern "C" __global__ void __launch_bounds__(THREADS, 1)
histogram_bank_spread(const u8* __restrict__ data, u32* __restrict__ out, u32 length, u32 channels,
                      u32 rows_per_block)
{
    extern __shared__ __align__(16) u32 smem[];
    u32* hist = smem;                                    // HIST_WORDS, bin-major
    u32* tile = smem + HIST_WORDS + (threadIdx.x >> 5) * TILE_WORDS;  // this warp's flush tile

    count_block_rows(hist, data, length, channels, rows_per_block);
    flush_bin_major(hist, tile, out, blockIdx.x, channels, threadIdx.x & 31, threadIdx.x >> 5);
}
