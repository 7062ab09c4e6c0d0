// v05: v04's conflict-free counting on a persistent grid — one block per SM, each block
// owning one 128-channel group and one contiguous run of rows — with the next batch of rows
// loaded while the current one is counted.
//
// v03/v04 launch (channels/128) x (length/8192) blocks: about four waves of 132 on an H100,
// each block zeroing and flushing 128 KB of counters for 8192 rows, and each thread with
// only its 4 loads in flight between two bursts of atomics. Here the grid is
// groups x chunks = the SM count (4 x 33 = 132 for 512 channels), so every SM streams one
// contiguous slice of length/33 rows of its group, zeroes and flushes its histogram once,
// and there is no wave tail. Inside the row loop each thread holds two register batches of
// UNROLL words: it issues the loads of batch i+1, then counts batch i, so that UNROLL loads
// per thread (32 KB per SM at 1024 threads x 8) are always in flight while the shared
// atomics run. Counting and flushing are v04's (histogram_bin_major.cuh).
//
// The persistent block (the THREADS and UNROLL defaults, the block's share counted by count_slice
// into its shared-memory histogram) is persistent_block in histogram_persistent.cuh, whose flush
// is a hook: this kernel hands it v04's flush, v06 its own.

#include "histogram_persistent.cuh"

// grid: groups * chunks blocks (block b: group b % groups, chunk b / groups)
extern "C" __global__ void __launch_bounds__(THREADS, 1)
histogram_persistent(const u8* __restrict__ data, u32* __restrict__ out, u32 length, u32 channels, u32 groups,
                     u32 chunks)
{
    persistent_block(data, length, channels, groups, chunks, [&](u32* hist, u32* tile, u32 group, u32 lane, u32 warp) {
        flush_bin_major(hist, tile, out, group, channels, lane, warp);
    });
}
