// v14: v07's kernel (v05's persistent grid, v04's counting and flush) with each block's flush starting at
// a different quarter of its tiles (flush_bin_major_shifted in histogram.cuh).
//
// v07's flush visits the block's 128 tiles (8 values x 32 channels each) as warp w: tiles w, w + 32,
// w + 64, w + 96. The 33 blocks of a channel group reach their flush together and add into the same
// 32768 output words, so at any moment all 33 are adding into the same 32 tiles' words, each word
// with up to 33 atomics queued on one L2 slice while three quarters of the group's words wait their
// turn. Here block (group, chunk) shifts its tiles by (chunk mod rounds) x WARPS, rounds = 128 / WARPS
// (with 1024 threads, (chunk mod 4) x 32: its warps start on quarter chunk mod 4 of the words), so about
// 8 blocks instead of 33 add into each word at a time, spread over four times as many words. Counting is v07's: persistent_block in histogram_persistent.cuh.

#include "histogram_persistent.cuh"

// grid: groups * chunks blocks (block b: group b % groups, chunk b / groups)
extern "C" __global__ void __launch_bounds__(THREADS, 1)
histogram_shifted_flush(const u8* __restrict__ data, u32* __restrict__ out, u32 length, u32 channels, u32 groups,
                        u32 chunks)
{
    persistent_block(data, length, channels, groups, chunks, [&](u32* hist, u32* tile, u32 group, u32 lane, u32 warp) {
        const u32 quarters = BIN_MAJOR_TILES / WARPS;  // rounds of the warps over the tiles
        flush_bin_major_shifted(hist, tile, out, group, channels, lane, warp, (blockIdx.x / groups) % quarters * WARPS);
    });
}
