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

typedef unsigned char u8;
typedef unsigned int u32;
typedef unsigned long long u64;

#define NUM_BINS 256
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

__device__ __forceinline__ void shared_inc(u32 addr)
{
    asm volatile("red.shared.add.u32 [%0], 1;" ::"r"(addr) : "memory");
}

__device__ __forceinline__ void count4(u32 lane_base, u32 x)
{
#pragma unroll
    for (u32 j = 0; j < 4; ++j) {
        const u32 value = __byte_perm(x, 0u, 0x4440u | j);
        shared_inc(lane_base + j * J_BYTES + (value << VALUE_SHIFT));
    }
}

// Add the block's bin-major histogram of channels [group*128, group*128+128) into out.
__device__ __forceinline__ void flush_bin_major(const u32* hist, u32* tile, u32* __restrict__ out, u32 group,
                                                u32 channels, u32 lane, u32 warp)
{
    // 128 tiles: 32 blocks of 8 values x 4 byte positions j (each j: 32 channels 4l + j)
    for (u32 t = warp; t < (NUM_BINS / 8) * 4; t += WARPS) {
        const u32 v0 = (t >> 2) * 8, j = t & 3;
#pragma unroll
        for (u32 k = 0; k < 8; ++k) tile[lane * TILE_PITCH + k] = hist[(v0 + k) * GROUP + j * 32 + lane];
        __syncwarp();
#pragma unroll
        for (u32 m = 0; m < 8; ++m) {
            const u32 l = (lane >> 3) + 4 * m, k = lane & 7;  // 8 lanes: 8 consecutive values of channel 4l + j
            const u32 count = tile[l * TILE_PITCH + k];
            const u32 channel = group * GROUP + 4 * l + j;
            if (count != 0 && channel < channels) atomicAdd(&out[channel * NUM_BINS + v0 + k], count);
        }
        __syncwarp();
    }
}

extern "C" __global__ void __launch_bounds__(THREADS, 1)
histogram_bank_spread(const u8* __restrict__ data, u32* __restrict__ out, u32 length, u32 channels,
                      u32 rows_per_block)
{
    extern __shared__ __align__(16) u32 smem[];
    u32* hist = smem;                                    // HIST_WORDS, bin-major
    u32* tile = smem + HIST_WORDS + (threadIdx.x >> 5) * TILE_WORDS;  // this warp's flush tile

    for (u32 i = threadIdx.x; i < HIST_WORDS / 4; i += THREADS)
        reinterpret_cast<uint4*>(hist)[i] = make_uint4(0u, 0u, 0u, 0u);
    __syncthreads();

    const u32 lane = threadIdx.x & 31;
    const u32 warp = threadIdx.x >> 5;
    const u32 col = blockIdx.x * GROUP + lane * 4;
    const u32 row_begin = blockIdx.y * rows_per_block;
    const u32 row_end = min(row_begin + rows_per_block, length);
    const u32 lane_base = (u32)__cvta_generic_to_shared(hist) + lane * LANE_BYTES;

    if (col < channels) {
        const u8* p = data + col;
        u32 row = row_begin + warp;
        for (; row + (BATCH - 1) * WARPS < row_end; row += BATCH * WARPS) {
            u32 x[BATCH];
#pragma unroll
            for (u32 u = 0; u < BATCH; ++u)
                x[u] = __ldg(reinterpret_cast<const u32*>(p + (u64)(row + u * WARPS) * channels));
#pragma unroll
            for (u32 u = 0; u < BATCH; ++u) count4(lane_base, x[u]);
        }
        for (; row < row_end; row += WARPS)
            count4(lane_base, __ldg(reinterpret_cast<const u32*>(p + (u64)row * channels)));
    }
    __syncthreads();
    flush_bin_major(hist, tile, out, blockIdx.x, channels, lane, warp);
}
