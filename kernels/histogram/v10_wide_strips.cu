// v10: v05's persistent loop on 256-byte strips: a block counts 256 channels, a lane loads 8 bytes
// of a row (channels 8l .. 8l+7), with 16-bit counters two to a word so that the 256 channels'
// histogram fits the 128 KB that held 128 channels' in v04-v09.
//
// Why: the probes read the input fastest in 256-byte strips (probe_read_w8), and v05-v09 read it in
// 128-byte ones, four blocks to a 512-byte row. Two blocks to a row, each with twice the bytes of a
// row, is that pattern; the counters are what kept a block to 128 channels.
//
// Layout: v04's bin-major words (histogram_bin_major.cuh: the word of (value b, j, lane l) at byte
// b*512 + j*128 + l*4, bank l), each word now two counters: its low half counts channel 8l + j, its
// high half channel 8l + j + 4 (j = 0..3). A row's 8 bytes are two count4 calls on the same words,
// adding 1 for bytes 0..3 and 65536 for bytes 4..7: the same conflict-free banks as v04.
// A half cannot carry into the other: the host gives no block more than 65535 rows.
//
// Flush: v04's tile transpose (for_each_bin_major, which reads the words as 128 "channels" 4l + j),
// each word split into its two counters, added into the zeroed output (8 lanes, 8 consecutive values
// of one channel: a sector a store, as v05's).
//
//   THREADS   threads per block, 1024 unless defined
//   UNROLL    rows per thread per batch, 8 unless defined (two batches of 8-byte loads in flight)

#ifndef THREADS
#define THREADS 1024
#endif
#ifndef UNROLL
#define UNROLL 8
#endif
#define WARPS (THREADS / 32)

#include "histogram_bin_major.cuh"

#define WIDE 256  // channels a block counts: 32 lanes x 8 bytes

// add `inc` to the counters of x's 4 bytes: byte j of x to the word of (value, j, lane)
__device__ __forceinline__ void count4_by(u32 lane_base, u32 x, u32 inc)
{
#pragma unroll
    for (u32 j = 0; j < 4; ++j) {
        const u32 value = __byte_perm(x, 0u, 0x4440u | j);
        asm volatile("red.shared.add.u32 [%0], %1;" ::"r"(lane_base + j * J_BYTES + (value << VALUE_SHIFT)), "r"(inc)
                     : "memory");
    }
}

__device__ __forceinline__ void count8(u32 lane_base, uint2 x)
{
    count4_by(lane_base, x.x, 1u);       // channels 8l .. 8l+3: the low halves
    count4_by(lane_base, x.y, 65536u);  // channels 8l+4 .. 8l+7: the high halves
}

// grid: groups * chunks blocks (block b: group b % groups of 256 channels, chunk b / groups of the rows)
extern "C" __global__ void __launch_bounds__(THREADS, 1)
histogram_wide_strips(const u8* __restrict__ data, u32* __restrict__ out, u32 length, u32 channels, u32 groups,
                      u32 chunks)
{
    extern __shared__ __align__(16) u32 smem[];
    u32* hist = smem;
    u32* tile = smem + HIST_WORDS + (threadIdx.x >> 5) * TILE_WORDS;
    zero_hist(hist);
    __syncthreads();

    const u32 lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const u32 group = blockIdx.x % groups, chunk = blockIdx.x / groups;
    const u32 row_begin = (u32)(((u64)chunk * length) / chunks);
    const u32 row_end = (u32)(((u64)(chunk + 1) * length) / chunks);
    const u32 col = group * WIDE + lane * 8;  // the first of this lane's 8 channels
    const u32 lane_base = (u32)__cvta_generic_to_shared(hist) + lane * LANE_BYTES;

    if (col < channels) {  // channels % 8 == 0: a lane's 8 channels are all in or all out
        const u64 step = (u64)WARPS * channels;  // bytes between two rows of one warp
        const u8* p = data + col + (u64)(row_begin + warp) * channels;
        const u32 batches = (row_end - row_begin) / (WARPS * UNROLL);
        if (batches > 0) {
            uint2 cur[UNROLL], nxt[UNROLL];
#pragma unroll
            for (u32 u = 0; u < UNROLL; ++u) cur[u] = __ldg(reinterpret_cast<const uint2*>(p + u * step));
            p += UNROLL * step;
            for (u32 b = 1; b < batches; ++b) {
#pragma unroll
                for (u32 u = 0; u < UNROLL; ++u) nxt[u] = __ldg(reinterpret_cast<const uint2*>(p + u * step));
                p += UNROLL * step;
#pragma unroll
                for (u32 u = 0; u < UNROLL; ++u) count8(lane_base, cur[u]);
#pragma unroll
                for (u32 u = 0; u < UNROLL; ++u) cur[u] = nxt[u];
            }
#pragma unroll
            for (u32 u = 0; u < UNROLL; ++u) count8(lane_base, cur[u]);
        }
        for (u32 row = row_begin + batches * WARPS * UNROLL + warp; row < row_end; row += WARPS)
            count8(lane_base, __ldg(reinterpret_cast<const uint2*>(data + col + (u64)row * channels)));
    }
    __syncthreads();

    // the words read as v04's 128 channels 4l + j (group 0), each split into its two counters
    for_each_bin_major(hist, tile, 0u, lane, warp, [&](u32 c, u32 v0, u32 k, u32 word) {
        const u32 lo = group * WIDE + 8 * (c >> 2) + (c & 3);  // its low half's channel; the high half's is lo + 4
        if ((word & 0xffffu) != 0 && lo < channels) atomicAdd(&out[lo * NUM_BINS + v0 + k], word & 0xffffu);
        if ((word >> 16) != 0 && lo + 4 < channels) atomicAdd(&out[(lo + 4) * NUM_BINS + v0 + k], word >> 16);
    });
}
