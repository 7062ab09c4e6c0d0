// The device micro-benchmarks of `report device --microbench` (see microbench.py): load latency by
// pointer chasing, and streaming load bandwidth at each level of the memory hierarchy.
//
// mb_chase: one thread follows a cycle of 64-bit pointers (one per 128-byte line, in a random order
// the host wrote), first `warm` steps untimed (to bring the working set into whatever holds it), then
// `steps` steps between two reads of the SM's cycle counter and of the global nanosecond timer. Each
// load's address is the value the previous load returned, so the time per step is the latency of one
// load at the level that holds the working set. The loads are `ld.global.ca` (cached in L1).
//
// mb_stream: every block reads `region` vectors of `float<V>` (ld.global.ca: cached in L1) starting at its
// own offset in a buffer of `total` vectors, wrapping to its start, `passes` times over, each thread
// summing what it loads (the sum is stored, so no load is dead). A warp reads in chunks of
// 32·2^LG vectors; within a chunk, `2^LG` loads of each lane touch every vector of the chunk once:
//   PATTERN 0, stride 2^LG (the homework's s<LG>): lane τ loads chunk + τ·2^LG + r, r < 2^LG;
//   PATTERN 1, permutation (the homework's p<LG>): lane τ loads chunk + 32·(((τ >> (5 - LG)) + r) mod 2^LG) + τ:
//   its low five bits are the lane, so no two lanes share a bank, while the warp's 32 lanes fall
//   in 2^LG distinct 128-byte lines.
// The level a run measures is set by its footprint: a per-block region that fits in L1 (passes read
// it again from L1), one buffer shared by all blocks that fits in L2 but not in L1, or disjoint
// per-block regions far larger than L2 (DRAM). Block 0..n write the cycles they took to `cycles`.

#ifndef V
#define V 1
#endif
#ifndef PATTERN
#define PATTERN 0
#endif
#ifndef LG
#define LG 0
#endif

#if V == 1
typedef float vec_t;
__device__ __forceinline__ float vsum(float x) { return x; }
#elif V == 2
typedef float2 vec_t;
__device__ __forceinline__ float vsum(float2 x) { return x.x + x.y; }
#elif V == 4
typedef float4 vec_t;
__device__ __forceinline__ float vsum(float4 x) { return (x.x + x.y) + (x.z + x.w); }
#else
#error "V must be 1, 2 or 4"
#endif

__device__ __forceinline__ unsigned long long chase_step(unsigned long long p) {
    unsigned long long next;
    asm volatile("ld.global.ca.u64 %0, [%1];" : "=l"(next) : "l"(p) : "memory");
    return next;
}

__device__ __forceinline__ unsigned long long global_ns() {
    unsigned long long t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
}

extern "C" __global__ void mb_chase(const unsigned long long* start, long long warm, long long steps,
                                    unsigned long long* out) {
    unsigned long long p = reinterpret_cast<unsigned long long>(start);
    for (long long i = 0; i < warm; ++i) p = chase_step(p);
    const long long c0 = clock64();
    const unsigned long long t0 = global_ns();
    for (long long i = 0; i < steps; i += 8) {
#pragma unroll
        for (int u = 0; u < 8; ++u) p = chase_step(p);
    }
    const long long c1 = clock64();
    const unsigned long long t1 = global_ns();
    out[0] = static_cast<unsigned long long>(c1 - c0);
    out[1] = t1 - t0;
    out[2] = p;  // the last pointer: keeps the chain live
}

#ifndef THREADS
#define THREADS 1024
#endif
#define WARPS (THREADS / 32)
// rounds unrolled: 8 rounds a trip (4 for four floats); each round is 2^LG loads a thread
#define UNROLL (V == 4 ? 4 : 8)
// a warp's successive chunks are STEP vectors apart: the block's warps read consecutive chunks
#define CHUNK (32u << LG)
#define STEP (WARPS * CHUNK)

__device__ __forceinline__ unsigned lane_offset(unsigned lane, unsigned r) {
#if PATTERN == 0
    return (lane << LG) + r;
#else
    return ((((lane >> (5 - LG)) + r) & ((1u << LG) - 1u)) << 5) + lane;
#endif
}

// `rounds` rounds from `seg` (a multiple of STEP into the buffer): in each, warp w reads chunk w of the
// round, 2^LG loads a lane. Every address is one of 2^LG per-thread pointers plus a constant (the
// unrolled round times STEP), so a load is one instruction and an add, the homework's 1 + 1/V.
__device__ __forceinline__ void read_rounds(const vec_t* __restrict__ seg, unsigned rounds, unsigned warp,
                                            unsigned lane, float& acc0, float& acc1) {
#if PATTERN == 0
    // stride: one pointer a thread, lane_offset(lane, r) - lane_offset(lane, 0) = r is a constant
    const vec_t* q = seg + warp * CHUNK + lane_offset(lane, 0);
#define AT(r, u) (q + (r) + (u) * STEP)
#define ADVANCE(n) (q += (n) * STEP)
#else
    // permutation: the r-th line of a lane depends on the lane, so one pointer a line (2^LG <= 8)
    const vec_t* q[1u << LG];
#pragma unroll
    for (unsigned r = 0; r < (1u << LG); ++r) q[r] = seg + warp * CHUNK + lane_offset(lane, r);
#define AT(r, u) (q[r] + (u) * STEP)
#define ADVANCE(n)                                                   \
    _Pragma("unroll") for (unsigned r = 0; r < (1u << LG); ++r) q[r] += (n) * STEP
#endif
    unsigned i = 0;
    for (; i + UNROLL <= rounds; i += UNROLL) {
#pragma unroll
        for (unsigned u = 0; u < UNROLL; ++u) {
#pragma unroll
            for (unsigned r = 0; r < (1u << LG); ++r) {
                const vec_t x = __ldca(AT(r, u));
                if ((u + r) & 1u) acc1 += vsum(x); else acc0 += vsum(x);
            }
        }
        ADVANCE(UNROLL);
    }
    for (; i < rounds; ++i) {
#pragma unroll
        for (unsigned r = 0; r < (1u << LG); ++r) acc0 += vsum(__ldca(AT(r, 0)));
        ADVANCE(1);
    }
#undef AT
#undef ADVANCE
}

// Block b reads `region` vectors from vector b·block_offset of a buffer of `total` vectors, wrapping to
// its start (two segments, each read straight through), `passes` times. All three are multiples of STEP.
extern "C" __global__ void __launch_bounds__(THREADS, 1) mb_stream(const vec_t* __restrict__ buffer, unsigned total,
                                                                unsigned block_offset, unsigned region, int passes,
                                                                float* sink, long long* cycles) {
    const unsigned warp = threadIdx.x >> 5, lane = threadIdx.x & 31u;
    const unsigned start = (blockIdx.x * block_offset) % total;
    const unsigned first = min(region, total - start);  // up to the buffer's end, then from its start
    float acc0 = 0.f, acc1 = 0.f;
    __syncthreads();
    const long long c0 = clock64();
    for (int p = 0; p < passes; ++p) {
        read_rounds(buffer + start, first / STEP, warp, lane, acc0, acc1);
        if (region > first) read_rounds(buffer, (region - first) / STEP, warp, lane, acc0, acc1);
    }
    __syncthreads();
    const long long c1 = clock64();
    if (threadIdx.x == 0) cycles[blockIdx.x] = c1 - c0;
    const float acc = acc0 + acc1;
    if (acc == 1234.5678f) sink[blockIdx.x * blockDim.x + threadIdx.x] = acc;  // never true on our data; not dead
}
