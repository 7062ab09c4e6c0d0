// Device helpers shared by transform's versions: the element type, the four functions, vector
// loads and stores of one group of four, and the deterministic reductions.
//
// ELEM_BF16 (0 or 1) picks the element type. bf16 is handled as its 16 bits (NVRTC needs no
// CUDA headers): widened to fp32 exactly by a shift, narrowed with round-to-nearest-even, as
// torch's .to(torch.bfloat16) does for finite values. Every version computes in fp32.
//
// TRANSFORM_FAST_MATH (0 or 1): the SFU intrinsics (__sinf, __cosf, __logf, __expf) in place of
// the libdevice functions.
//
// TRANSFORM_HW_CVT (0 or 1): bf16 stores round and pack two values per instruction
// (cvt.rn.bf16x2.f32) instead of from_f's integer rounding; the same bits for finite values.
//
// TRANSFORM_STREAMING (0 or 1): the group loads and stores with the streaming cache hint
// (ld.global.cs / st.global.cs: evict first), for data touched once.

#pragma once

typedef unsigned int u32;
typedef unsigned short u16;
typedef unsigned long long u64;

#ifndef ELEM_BF16
#define ELEM_BF16 0
#endif
#ifndef TRANSFORM_FAST_MATH
#define TRANSFORM_FAST_MATH 0
#endif
#ifndef TRANSFORM_HW_CVT
#define TRANSFORM_HW_CVT 0
#endif
#ifndef TRANSFORM_STREAMING
#define TRANSFORM_STREAMING 0
#endif

#if ELEM_BF16
typedef u16 elem_t;
__device__ __forceinline__ float to_f(elem_t v) { return __uint_as_float(((u32)v) << 16); }
__device__ __forceinline__ elem_t from_f(float f)
{
    u32 u = __float_as_uint(f);
    u += 0x7FFFu + ((u >> 16) & 1u);  // round to nearest, ties to even
    return (elem_t)(u >> 16);
}
#else
typedef float elem_t;
__device__ __forceinline__ float to_f(elem_t v) { return v; }
__device__ __forceinline__ elem_t from_f(float f) { return f; }
#endif

// f by i % 4: sin, cos, log, exp
#if TRANSFORM_FAST_MATH
__device__ __forceinline__ float f0(float v) { return __sinf(v); }
__device__ __forceinline__ float f1(float v) { return __cosf(v); }
__device__ __forceinline__ float f2(float v) { return __logf(v); }
__device__ __forceinline__ float f3(float v) { return __expf(v); }
#else
__device__ __forceinline__ float f0(float v) { return sinf(v); }
__device__ __forceinline__ float f1(float v) { return cosf(v); }
__device__ __forceinline__ float f2(float v) { return logf(v); }
__device__ __forceinline__ float f3(float v) { return expf(v); }
#endif

__device__ __forceinline__ float f_of(u32 k, float v)
{
    switch (k) {
    case 0: return f0(v);
    case 1: return f1(v);
    case 2: return f2(v);
    default: return f3(v);
    }
}

// y[i] for one element, reading x[i - 16] from global memory where i % 32 >= 16
__device__ __forceinline__ float transform_one(const elem_t* __restrict__ x, u64 i)
{
    const u32 k = (u32)(i & 3);
    float v = f_of(k, to_f(x[i]));
    if ((i & 31) >= 16) v *= f_of(k, to_f(x[i - 16]));
    return v;
}

// one group of four elements (i % 4 == 0), as one vector access: 16 bytes of fp32, 8 of bf16
struct group4 { float a, b, c, d; };

__device__ __forceinline__ group4 load4(const elem_t* __restrict__ p)
{
#if ELEM_BF16
#if TRANSFORM_STREAMING
    const uint2 w = __ldcs(reinterpret_cast<const uint2*>(p));
#else
    const uint2 w = *reinterpret_cast<const uint2*>(p);
#endif
    return group4{to_f((u16)(w.x & 0xFFFFu)), to_f((u16)(w.x >> 16)), to_f((u16)(w.y & 0xFFFFu)), to_f((u16)(w.y >> 16))};
#else
#if TRANSFORM_STREAMING
    const float4 w = __ldcs(reinterpret_cast<const float4*>(p));
#else
    const float4 w = *reinterpret_cast<const float4*>(p);
#endif
    return group4{w.x, w.y, w.z, w.w};
#endif
}

__device__ __forceinline__ void store4(elem_t* __restrict__ p, group4 g)
{
#if ELEM_BF16
    uint2 w;
#if TRANSFORM_HW_CVT
    // PTX puts its first source in the upper half: g.b (the higher address) goes first
    asm("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(w.x) : "f"(g.b), "f"(g.a));
    asm("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(w.y) : "f"(g.d), "f"(g.c));
#else
    w.x = (u32)from_f(g.a) | ((u32)from_f(g.b) << 16);
    w.y = (u32)from_f(g.c) | ((u32)from_f(g.d) << 16);
#endif
#if TRANSFORM_STREAMING
    __stcs(reinterpret_cast<uint2*>(p), w);
#else
    *reinterpret_cast<uint2*>(p) = w;
#endif
#else
#if TRANSFORM_STREAMING
    __stcs(reinterpret_cast<float4*>(p), make_float4(g.a, g.b, g.c, g.d));
#else
    *reinterpret_cast<float4*>(p) = make_float4(g.a, g.b, g.c, g.d);
#endif
#endif
}

// The sum of a block's values in a fixed order (the same bits on every call): each warp's by
// shuffles down a fixed tree, then the warps' sums in order by warp 0. Every thread of the block
// must call it; the result is valid in thread 0.
__device__ __forceinline__ double block_sum_fixed(double v)
{
    __shared__ double warp_sums[32];
    for (int off = 16; off > 0; off >>= 1) v += __shfl_down_sync(0xffffffffu, v, off);
    const u32 lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    if (lane == 0) warp_sums[warp] = v;
    __syncthreads();
    double total = 0.0;
    if (threadIdx.x == 0) {
        const u32 warps = (blockDim.x + 31) >> 5;
        for (u32 w = 0; w < warps; ++w) total += warp_sums[w];
    }
    return total;
}

// One group through the four functions, with the look-back: the threads of a warp hold 32
// consecutive groups (four whole 32-blocks), and a group in a block's upper half (g % 8 >= 4)
// multiplies by the f values of the group 16 elements back, which the lane four below holds.
// Every lane of the warp must call it (the shuffles).
__device__ __forceinline__ group4 transform_group(group4 v, u64 g)
{
    group4 f{f0(v.a), f1(v.b), f2(v.c), f3(v.d)};
    const float pa = __shfl_up_sync(0xffffffffu, f.a, 4), pb = __shfl_up_sync(0xffffffffu, f.b, 4);
    const float pc = __shfl_up_sync(0xffffffffu, f.c, 4), pd = __shfl_up_sync(0xffffffffu, f.d, 4);
    if ((g & 7) >= 4) f = group4{f.a * pa, f.b * pb, f.c * pc, f.d * pd};
    return f;
}

// The end of a grid-stride kernel over the whole 32-blocks (``groups`` groups): block 0 does the
// partial 32-block after them one element per thread (as v01), then each block adds its threads'
// sin terms (``acc``) in double in a fixed order and writes its partial.
__device__ __forceinline__ void finish_block(const elem_t* __restrict__ x, elem_t* __restrict__ y,
                                             double* __restrict__ partials, u64 n, u64 groups, float acc)
{
    double term = acc;
    const u64 tail = groups * 4;
    if (blockIdx.x == 0 && tail + threadIdx.x < n) {
        const u64 i = tail + threadIdx.x;
        const float v = transform_one(x, i);
        y[i] = from_f(v);
        if ((i & 3) == 0 && i + 1 < n && transform_one(x, i + 1) > 0.5f) term += v;
    }
    const double s = block_sum_fixed(term);
    if (threadIdx.x == 0) partials[blockIdx.x] = s;
}

// UNROLL groups in flight per thread: a block's iteration covers UNROLL·blockDim groups, each
// thread loading its UNROLL groups (blockDim apart, so a warp holds 32 consecutive groups for the
// look-back) before it transforms and stores the first. Returns the thread's sum of sin terms.
template <int UNROLL_N>
__device__ __forceinline__ float grid_loop(const elem_t* __restrict__ x, elem_t* __restrict__ y, u64 groups)
{
    const u64 chunk = (u64)blockDim.x * UNROLL_N;  // groups per block per iteration
    const u64 stride = (u64)gridDim.x * chunk;
    float acc = 0.0f;
    for (u64 base = (u64)blockIdx.x * chunk; base < groups; base += stride) {
        group4 v[UNROLL_N];
#pragma unroll
        for (int u = 0; u < UNROLL_N; ++u) {
            const u64 g = base + (u64)u * blockDim.x + threadIdx.x;
            v[u] = g < groups ? load4(x + 4 * g) : group4{1.f, 1.f, 1.f, 1.f};
        }
#pragma unroll
        for (int u = 0; u < UNROLL_N; ++u) {
            const u64 g = base + (u64)u * blockDim.x + threadIdx.x;
            const group4 f = transform_group(v[u], g);
            if (g < groups) {
                store4(y + 4 * g, f);
                if (f.b > 0.5f) acc += f.a;
            }
        }
    }
    return acc;
}

// The tail and the sum in the same launch: as finish_block, then every block takes a ticket
// after writing its partial; the block holding the last ticket adds all the partials in a fixed
// order (by block index, each thread a fixed strided subset, then block_sum_fixed), writes *out
// and puts the ticket counter back to 0 for the next launch. Which block comes last varies from
// call to call; the order of the additions does not.
__device__ __forceinline__ void finish_grid(const elem_t* __restrict__ x, elem_t* __restrict__ y,
                                            double* __restrict__ partials, u32* __restrict__ ticket,
                                            double* __restrict__ out, u64 n, u64 groups, float acc)
{
    finish_block(x, y, partials, n, groups, acc);
    __shared__ bool last;
    if (threadIdx.x == 0) {
        __threadfence();  // this block's partial is visible before its ticket is
        last = atomicAdd(ticket, 1u) == gridDim.x - 1;
    }
    __syncthreads();
    if (!last) return;
    __threadfence();
    double v = 0.0;
    for (u32 j = threadIdx.x; j < gridDim.x; j += blockDim.x) v += ((volatile double*)partials)[j];
    v = block_sum_fixed(v);
    if (threadIdx.x == 0) {
        *out = v;
        *ticket = 0u;
    }
}

// Second pass: one block of 1024 threads sums the per-block partial sums in a fixed order (each
// thread a fixed strided subset, then block_sum_fixed) into *out.
extern "C" __global__ void __launch_bounds__(1024)
transform_sum_partials(const double* __restrict__ partials, u32 count, double* __restrict__ out)
{
    double v = 0.0;
    for (u32 j = threadIdx.x; j < count; j += blockDim.x) v += partials[j];
    v = block_sum_fixed(v);
    if (threadIdx.x == 0) *out = v;
}

// One block alone over the groups [begin, end) (begin a multiple of 8 groups), one group per
// thread per step, as v02's loop: the whole groups a tiled version leaves after its last whole
// tile. Every thread of the block must call it (the shuffles). Returns the thread's sum of sin terms.
__device__ __forceinline__ float block_loop(const elem_t* __restrict__ x, elem_t* __restrict__ y, u64 begin, u64 end)
{
    float acc = 0.0f;
    for (u64 base = begin; base < end; base += blockDim.x) {
        const u64 g = base + threadIdx.x;
        const bool live = g < end;
        const group4 f = transform_group(live ? load4(x + 4 * g) : group4{1.f, 1.f, 1.f, 1.f}, g);
        if (live) {
            store4(y + 4 * g, f);
            if (f.b > 0.5f) acc += f.a;
        }
    }
    return acc;
}

// Two consecutive groups (g0 even, g0 + 1) of one lane: 32 bytes of fp32 or 16 of bf16, loaded
// and stored as one piece where the dtype allows (bf16: one 16-byte access).
struct group8 { group4 lo, hi; };

__device__ __forceinline__ group8 load8(const elem_t* __restrict__ p)
{
#if ELEM_BF16
    const uint4 w = *reinterpret_cast<const uint4*>(p);
    return group8{group4{to_f((u16)(w.x & 0xFFFFu)), to_f((u16)(w.x >> 16)), to_f((u16)(w.y & 0xFFFFu)), to_f((u16)(w.y >> 16))},
                  group4{to_f((u16)(w.z & 0xFFFFu)), to_f((u16)(w.z >> 16)), to_f((u16)(w.w & 0xFFFFu)), to_f((u16)(w.w >> 16))}};
#else
    const float4 a = *reinterpret_cast<const float4*>(p), b = *reinterpret_cast<const float4*>(p + 4);
    return group8{group4{a.x, a.y, a.z, a.w}, group4{b.x, b.y, b.z, b.w}};
#endif
}

#if ELEM_BF16
__device__ __forceinline__ u32 pack_bf16x2(float lo, float hi)
{
#if TRANSFORM_HW_CVT
    u32 w;
    asm("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(w) : "f"(hi), "f"(lo));
    return w;
#else
    return (u32)from_f(lo) | ((u32)from_f(hi) << 16);
#endif
}
#endif

__device__ __forceinline__ void store8(elem_t* __restrict__ p, group8 g)
{
#if ELEM_BF16
    *reinterpret_cast<uint4*>(p) = make_uint4(pack_bf16x2(g.lo.a, g.lo.b), pack_bf16x2(g.lo.c, g.lo.d),
                                              pack_bf16x2(g.hi.a, g.hi.b), pack_bf16x2(g.hi.c, g.hi.d));
#else
    *reinterpret_cast<float4*>(p) = make_float4(g.lo.a, g.lo.b, g.lo.c, g.lo.d);
    *reinterpret_cast<float4*>(p + 4) = make_float4(g.hi.a, g.hi.b, g.hi.c, g.hi.d);
#endif
}

// transform_group for two consecutive groups per lane (g0 even): a warp holds 64 consecutive
// groups (eight whole 32-blocks), and the groups 16 elements back (g0 - 4, g0 - 3) are the
// same two of the lane two below. Both groups are in the same half of their 32-block.
// Every lane of the warp must call it (the shuffles).
__device__ __forceinline__ group8 transform_group8(group8 v, u64 g0)
{
    group4 a{f0(v.lo.a), f1(v.lo.b), f2(v.lo.c), f3(v.lo.d)};
    group4 b{f0(v.hi.a), f1(v.hi.b), f2(v.hi.c), f3(v.hi.d)};
    const float pa = __shfl_up_sync(0xffffffffu, a.a, 2), pb = __shfl_up_sync(0xffffffffu, a.b, 2);
    const float pc = __shfl_up_sync(0xffffffffu, a.c, 2), pd = __shfl_up_sync(0xffffffffu, a.d, 2);
    const float qa = __shfl_up_sync(0xffffffffu, b.a, 2), qb = __shfl_up_sync(0xffffffffu, b.b, 2);
    const float qc = __shfl_up_sync(0xffffffffu, b.c, 2), qd = __shfl_up_sync(0xffffffffu, b.d, 2);
    if ((g0 & 7) >= 4) {
        a = group4{a.a * pa, a.b * pb, a.c * pc, a.d * pd};
        b = group4{b.a * qa, b.b * qb, b.c * qc, b.d * qd};
    }
    return group8{a, b};
}
