// The sum of the sin terms as one 64-bit word: every block adds its part, and its ticket, with one
// atomic, and the block whose atomic comes last has the whole sum in the value it gets back.
//
// finish_grid (transform.cuh, v06 to v12) writes each block's partial in double, fences, takes a
// ticket with an atomic; the last block fences again, reads every partial and adds them in a fixed
// order. Its chain after the block's last tile (store, fence, atomic, fence, loads, two barriers)
// cost 2.6 µs per call on the H100 against the same kernel without it (v12 and its ring_no_sum
// probe, both dtypes). Here the order of the additions cannot change the bits because they are
// integer additions: each thread's fp32 sum becomes fixed point (round(acc · 2^24), exact for
// every term of 2^-9 or more), a block adds its threads' in int64, and thread 0 adds
//     2^52 + (its block's sum + bias)
// to the word: the top 12 bits count the blocks (a ticket), the low 52 the biased sum. The bias,
// the same for every block, keeps each block's part non-negative, so no borrow reaches the count.
// The atomic returns the word before it: the block that gets back a count of G - 1 is the last, and
// old + its own part is every block's contribution, already added; it subtracts G · bias, writes
// the sum in double (exact: under 2^52 · 2^-24), and puts the word back to 0 for the next call.
// No fence: the sum travels inside the atomics. One word per device, zero between calls; two
// calls at once on two streams would share it (as v06's ticket).
//
// The word's room: G · 2 · bias < 2^52 with bias = 2^25 · (M + 1), M the most sin terms one block
// can count (each |term| ≤ 1, a thread's fp32 sum of k terms at most k, doubled for margin):
// G · (M + 1) < 2^26, about 2^28 elements at 4 blocks per SM. packed_sum_fits says whether a launch
// fits; a launch that does not writes NaN for the sum (the host refuses it before launching).
#pragma once

#define PACKED_COUNT_SHIFT 52
#define PACKED_VALUE_MASK ((1ull << PACKED_COUNT_SHIFT) - 1ull)
#define PACKED_SCALE 16777216.0f  // 2^24: fixed point with 24 fraction bits

// the bias for blocks that count at most `most_terms` sin terms each
__device__ __forceinline__ u64 packed_bias(u64 most_terms) { return (most_terms + 1ull) << 25; }

__device__ __forceinline__ bool packed_sum_fits(u64 most_terms, u32 grid)
{
    return grid < (1u << (64 - PACKED_COUNT_SHIFT)) && (u64)grid * (most_terms + 1ull) < (1ull << 26);
}

// The sum of a block's int64 values (any order gives the same bits); valid in thread 0. Every
// thread of the block must call it.
__device__ __forceinline__ long long block_sum_i64(long long v)
{
    __shared__ long long warp_sums_i64[32];
    for (int off = 16; off > 0; off >>= 1) v += __shfl_down_sync(0xffffffffu, v, off);
    const u32 lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    if (lane == 0) warp_sums_i64[warp] = v;
    __syncthreads();
    long long total = 0;
    if (threadIdx.x == 0) {
        const u32 warps = (blockDim.x + 31) >> 5;
        for (u32 w = 0; w < warps; ++w) total += warp_sums_i64[w];
    }
    return total;
}

// The end of a kernel over the whole 32-blocks (``groups`` groups): block 0 does the partial
// 32-block after them one element per thread (as finish_block), then each block adds its threads'
// sin terms (``acc``) to *word with one atomic, and the last writes *out and clears *word. Every
// thread of every block must call it, with the same ``most_terms``.
__device__ __forceinline__ void finish_packed(const elem_t* __restrict__ x, elem_t* __restrict__ y,
                                              unsigned long long* __restrict__ word, double* __restrict__ out,
                                              u64 n, u64 groups, float acc, u64 most_terms)
{
    const u64 tail = groups * 4;
    if (blockIdx.x == 0 && tail + threadIdx.x < n) {
        const u64 i = tail + threadIdx.x;
        const float v = transform_one(x, i);
        y[i] = from_f(v);
        if ((i & 3) == 0 && i + 1 < n && transform_one(x, i + 1) > 0.5f) acc += v;
    }
    const long long part = block_sum_i64(__float2ll_rn(acc * PACKED_SCALE));
    if (threadIdx.x == 0) {
        const u64 bias = packed_bias(most_terms);
        const unsigned long long add = (1ull << PACKED_COUNT_SHIFT) + (unsigned long long)(part + (long long)bias);
        const unsigned long long old = atomicAdd(word, add);
        if ((old >> PACKED_COUNT_SHIFT) == gridDim.x - 1) {
            const long long value = (long long)((old + add) & PACKED_VALUE_MASK) - (long long)(bias * gridDim.x);
            *out = packed_sum_fits(most_terms, gridDim.x) ? (double)value * (1.0 / (double)PACKED_SCALE)
                                                          : __longlong_as_double(0x7ff8000000000000ll);
            *word = 0ull;
        }
    }
}

// v15's word: the count in the low 12 bits, the sum above them. Each block adds
//     (its block's sum << 12) + 1
// so the count never carries into the sum (G < 4096) and a negative sum, in two's complement,
// never borrows from the count; the word wraps modulo 2^64, and the total is exact as long as
// |the sum| < 2^51, whatever each block holds (the tiles are handed out as the blocks ask, so no
// block's share is known in advance, as v13's bias needs). Each |term| ≤ 1 rounds to at most
// 2^24 + 1 units: n/4 groups fit while n/4 · (2^24 + 1) < 2^51, a little under 2^29 elements.
// The last block (its atomic returns a count of G − 1) writes the sum in double and puts the word
// and the tile counter *next back to 0 for the next call: every block has drawn its last tile
// before it adds to the word.
__device__ __forceinline__ void finish_counted(const elem_t* __restrict__ x, elem_t* __restrict__ y,
                                               unsigned long long* __restrict__ word, u32* __restrict__ next,
                                               double* __restrict__ out, u64 n, u64 groups, long long sum)
{
    const u64 tail = groups * 4;
    float acc = 0.0f;
    if (blockIdx.x == 0 && tail + threadIdx.x < n) {  // the partial 32-block, as finish_block
        const u64 i = tail + threadIdx.x;
        const float v = transform_one(x, i);
        y[i] = from_f(v);
        if ((i & 3) == 0 && i + 1 < n && transform_one(x, i + 1) > 0.5f) acc += v;
    }
    const long long part = block_sum_i64(sum + __float2ll_rn(acc * PACKED_SCALE));
    if (threadIdx.x == 0) {
        const unsigned long long add = ((unsigned long long)part << 12) + 1ull;
        const unsigned long long old = atomicAdd(word, add);
        if ((old & 0xfffull) == gridDim.x - 1) {
            *out = (double)((long long)(old + add) >> 12) * (1.0 / (double)PACKED_SCALE);
            *word = 0ull;
            *next = 0u;
        }
    }
}
