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

#define GROUP 128                       // channels per block: 32 lanes x 4 bytes
#define HIST_WORDS (GROUP * NUM_BINS)   // 32768 counters, 128 KB
#define THREADS 1024
#define WARPS (THREADS / 32)
#define BATCH 4                         // rows loaded per thread before counting
#define TILE_PITCH 9                    // words per tile row: 8 values + 1 pad
#define TILE_WORDS (32 * TILE_PITCH)

// counter of (channel 4*lane + j, value b) at byte b*512 + j*128 + lane*4: bin-major, bank = lane
#define LANE_BYTES 4
#define J_BYTES (32 * 4)
#define VALUE_SHIFT 9

#include "histogram.cuh"

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
