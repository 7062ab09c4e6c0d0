// v02: a block-private histogram in shared memory for 32 channels, merged into the global
// histogram once at the end.
//
// Block (g, s) owns channels [32g, 32g+32) and rows [s*rows_per_block, ...). Lane l of every
// warp reads channel 32g+l, so a warp reads the 32 bytes of one row that belong to the
// block (one 32-byte sector) and the block's 8 warps read 8 consecutive rows per step.
// The counters live in shared memory, channel-major like the output (hist[c][b], 32 KB),
// so atomics are shared-memory atomics executed in the SM instead of L2 round trips, and the
// final merge is one coalesced atomicAdd per counter. What this layout costs: the word of
// (c, b) sits in bank b % 32 whatever the channel, so lanes whose values agree modulo 32
// collide on one bank; in the contention case (one value in 90 % of the bytes) most of the
// 32 lanes hit the same bank and the atomic serialises.

#define GROUP 32       // channels per block: one lane per channel
#define THREADS 256    // 8 warps: 8 rows per step

#include "histogram.cuh"

extern "C" __global__ void __launch_bounds__(THREADS)
histogram_smem_privatized(const u8* __restrict__ data, u32* __restrict__ out, u32 length, u32 channels,
                          u32 rows_per_block)
{
    __shared__ u32 hist[GROUP * NUM_BINS];  // hist[c_local * 256 + value]

    for (u32 i = threadIdx.x; i < GROUP * NUM_BINS; i += THREADS) hist[i] = 0;
    __syncthreads();

    const u32 lane = threadIdx.x & 31;
    const u32 warp = threadIdx.x >> 5;
    const u32 channel = blockIdx.x * GROUP + lane;
    const u32 row_begin = blockIdx.y * rows_per_block;
    const u32 row_end = min(row_begin + rows_per_block, length);

    if (channel < channels) {
        u32* my_hist = hist + lane * NUM_BINS;
        #pragma unroll 4
        for (u32 row = row_begin + warp; row < row_end; row += THREADS / 32) {
            const u32 value = data[(u64)row * channels + channel];
            atomicAdd(&my_hist[value], 1u);
        }
    }
    __syncthreads();

    // hist has the output's layout for these 32 channels: out[(32g + c) * 256 + b], contiguous
    flush_channel_major(hist, out, channels);
}
