// v03: one 32-bit load gives a thread 4 channels; a block owns 128 channels (one 128-byte
// line of every row) in 128 KB of shared memory, and each thread loads 4 rows before it
// counts any of them.
//
// Lane l of a warp loads bytes [4l, 4l+4) of the block's 128-byte slice of one row, so one
// warp instruction reads a whole cache line (v02 read one 32-byte sector per instruction,
// one byte per thread). The 32 warps of a block take 32 consecutive rows per step, each
// thread 4 steps at once: 4 independent loads in flight per thread where v02 had one (the
// compiler does not move a load above a shared-memory atomic, so the batching is written
// out). The histogram stays channel-major like the output (hist[c][b], int32, 128 x 256 x
// 4 B = 128 KB, above the 48 KB default: the launcher opts in), the flush is one coalesced
// global atomicAdd per counter as in v02, and the bank of (c, b) is still b % 32: lanes with
// equal values modulo 32 collide, and the contention case serialises.

#define GROUP 128                       // channels per block: 32 lanes x 4 bytes
#define HIST_WORDS (GROUP * NUM_BINS)   // 32768 counters, 128 KB
#define THREADS 1024
#define WARPS (THREADS / 32)
#define BATCH 4                         // rows loaded per thread before counting

// counter of (channel 4*lane + j, value b) at byte lane*4096 + j*1024 + b*4: channel-major
#define LANE_BYTES (4 * NUM_BINS * 4)
#define J_BYTES (NUM_BINS * 4)
#define VALUE_SHIFT 2

#include "histogram.cuh"

extern "C" __global__ void __launch_bounds__(THREADS, 1)
histogram_word_loads(const u8* __restrict__ data, u32* __restrict__ out, u32 length, u32 channels,
                     u32 rows_per_block)
{
    extern __shared__ __align__(16) u32 hist[];  // hist[c_local * 256 + value]

    count_block_rows(hist, data, length, channels, rows_per_block);

    // hist has the output's layout for these 128 channels: contiguous, coalesced atomics
    flush_channel_major(hist, out, channels);
}
