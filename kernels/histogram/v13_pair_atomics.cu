// v13: v07's kernel (v05's persistent grid, v04's counting) with a flush of half as many global atomics:
// two counters an atomic, as one 64-bit add (flush_bin_major_pairs in histogram.cuh).
//
// Every block of v07 ends with 32768 global atomicAdds (128 channels x 256 values), all 132 blocks at
// once, 4.3 million adds into the 512 KB output that the L2's atomic units perform. After v04's tile
// transpose, 8 consecutive lanes hold 8 consecutive values of one channel, so two neighbouring
// counters are two adjacent int32 words of the output: the even lane takes its neighbour's count by a
// shuffle and adds both with one 64-bit atomic (its own count in the low word). The sums never carry
// from the low word into the high one, since a counter's total is at most the length (below 2^31).
// Counting is v07's: persistent_block in histogram_persistent.cuh, its flush hook set here.

#include "histogram_persistent.cuh"

// grid: groups * chunks blocks (block b: group b % groups, chunk b / groups)
extern "C" __global__ void __launch_bounds__(THREADS, 1)
histogram_pair_atomics(const u8* __restrict__ data, u32* __restrict__ out, u32 length, u32 channels, u32 groups,
                       u32 chunks)
{
    persistent_block(data, length, channels, groups, chunks, [&](u32* hist, u32* tile, u32 group, u32 lane, u32 warp) {
        flush_bin_major_pairs(hist, tile, out, group, channels, lane, warp);
    });
}
