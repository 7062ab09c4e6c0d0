// Device helpers shared by matmul's versions: the element type, guarded loads and stores of an
// n x n row-major matrix (an edge tile reads zeros outside the matrix and writes nothing there),
// four-element vector loads and stores in global and shared memory, the store of a thread's
// V x V outputs, and the cp.async pieces the pipelined versions use.
//
// ELEM_FP16 (0 or 1) picks the element type of A, B and C. fp16 is handled as its 16 bits (NVRTC
// needs no CUDA headers) and converted by cvt: every version multiplies and accumulates in fp32
// and rounds to fp16 only when it stores C (round to nearest even, as torch's .half()).
//
// Four-element accesses: "vec" means n % 4 == 0, so that a run of four elements starting at a
// column that is a multiple of 4 is 16-byte (fp32) or 8-byte (fp16) aligned and lies wholly inside
// or wholly outside the matrix; without it the same helpers fall back to four guarded scalar
// accesses. A kernel computes vec once (it is uniform across the grid).
//
// Append-only once a version is recorded: a different behaviour gets a new helper with its own name.
#pragma once

#include "common/sm90/ptx.cuh"
#include "common/sm90/cp_async.cuh"

#ifndef ELEM_FP16
#define ELEM_FP16 0
#endif

#if ELEM_FP16
typedef u16 elem_t;
__device__ __forceinline__ float elem_to_float(elem_t h)
{
    float f;
    asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h));
    return f;
}
__device__ __forceinline__ elem_t float_to_elem(float f)
{
    u16 h;
    asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(f));
    return h;
}
#else
typedef float elem_t;
__device__ __forceinline__ float elem_to_float(elem_t v) { return v; }
__device__ __forceinline__ elem_t float_to_elem(float f) { return f; }
#endif

// the offset of (row, col): 64-bit, since n * n passes 2^31 at n = 46341
__device__ __forceinline__ u64 at(int row, int col, int n) { return (u64)row * (u64)n + (u64)col; }

// m[row][col] as fp32, or 0 outside the n x n matrix (the padding of an edge tile)
__device__ __forceinline__ float load_or_zero(const elem_t* __restrict__ m, int row, int col, int n)
{
    return (row < n && col < n) ? elem_to_float(m[at(row, col, n)]) : 0.0f;
}

__device__ __forceinline__ void store_if_inside(elem_t* __restrict__ m, int row, int col, int n, float v)
{
    if (row < n && col < n) m[at(row, col, n)] = float_to_elem(v);
}

// the four values of an 8-byte fp16 quad, or of a 16-byte fp32 quad, as a float4
#if ELEM_FP16
__device__ __forceinline__ float4 quad_to_float4(uint2 q)
{
    return make_float4(elem_to_float((elem_t)(q.x & 0xFFFFu)), elem_to_float((elem_t)(q.x >> 16)), elem_to_float((elem_t)(q.y & 0xFFFFu)),
                       elem_to_float((elem_t)(q.y >> 16)));
}
__device__ __forceinline__ float4 lds4(const elem_t* p) { return quad_to_float4(*reinterpret_cast<const uint2*>(p)); }
#else
__device__ __forceinline__ float4 lds4(const elem_t* p) { return *reinterpret_cast<const float4*>(p); }
#endif

// m[row][col .. col+3] as fp32 (zeros outside the matrix): one vector load when vec
__device__ __forceinline__ float4 load4_or_zero(const elem_t* __restrict__ m, int row, int col, int n, bool vec)
{
    if (vec) {
        if (row >= n || col >= n) return make_float4(0.0f, 0.0f, 0.0f, 0.0f);
        return lds4(m + at(row, col, n));  // a generic load: global here
    }
    return make_float4(load_or_zero(m, row, col, n), load_or_zero(m, row, col + 1, n),
                       load_or_zero(m, row, col + 2, n), load_or_zero(m, row, col + 3, n));
}

// m[row][col .. col+3] = v (what lies inside the matrix): one vector store when vec
__device__ __forceinline__ void store4_if_inside(elem_t* __restrict__ m, int row, int col, int n, float4 v, bool vec)
{
    if (vec) {
        if (row >= n || col >= n) return;
#if ELEM_FP16
        *reinterpret_cast<uint2*>(m + at(row, col, n)) = make_uint2(pack_half2(v.x, v.y), pack_half2(v.z, v.w));
#else
        *reinterpret_cast<float4*>(m + at(row, col, n)) = v;
#endif
        return;
    }
    store_if_inside(m, row, col, n, v.x);
    store_if_inside(m, row, col + 1, n, v.y);
    store_if_inside(m, row, col + 2, n, v.z);
    store_if_inside(m, row, col + 3, n, v.w);
}

__device__ __forceinline__ float lane_of(float4 v, int i) { return i == 0 ? v.x : i == 1 ? v.y : i == 2 ? v.z : v.w; }

// the 16-byte aligned float4 at p (fp32 shared or global memory, whatever the element type)
__device__ __forceinline__ float4 ld_float4(const float* p) { return *reinterpret_cast<const float4*>(p); }
__device__ __forceinline__ void st_float4(float* p, float4 v) { *reinterpret_cast<float4*>(p) = v; }

// r[i .. i+3] = v (i known at compile time after unrolling, so r stays in registers)
template <int M>
__device__ __forceinline__ void put4(float (&r)[M], int i, float4 v)
{
    r[i] = v.x;
    r[i + 1] = v.y;
    r[i + 2] = v.z;
    r[i + 3] = v.w;
}

// c[i][j] += a[i] * b[j]: the outer product every tiled version's inner loop is made of
template <int M, int N>
__device__ __forceinline__ void outer_product(float (&c)[M][N], const float (&a)[M], const float (&b)[N])
{
#pragma unroll
    for (int i = 0; i < M; ++i)
#pragma unroll
        for (int j = 0; j < N; ++j) c[i][j] = fmaf(a[i], b[j], c[i][j]);
}

// the same outer product in another issue order (v22): ORDER 0 rows outer (outer_product's), 1 rows
// outer with every other row walked backwards (a serpentine: the last b[j] of a row is the first of
// the next, so consecutive FMAs share an operand across the turn too), 2 columns outer, 3 columns
// outer as a serpentine. The order decides which source operands consecutive FMAs share, and so
// what the operand reuse caches catch and how often three sources meet in one register bank.
template <int ORDER, int M, int N>
__device__ __forceinline__ void outer_product_ordered(float (&c)[M][N], const float (&a)[M], const float (&b)[N])
{
    if (ORDER == 0 || ORDER == 1) {
#pragma unroll
        for (int i = 0; i < M; ++i)
#pragma unroll
            for (int jj = 0; jj < N; ++jj) {
                const int j = (ORDER == 1 && (i & 1)) ? N - 1 - jj : jj;
                c[i][j] = fmaf(a[i], b[j], c[i][j]);
            }
    } else {
#pragma unroll
        for (int j = 0; j < N; ++j)
#pragma unroll
            for (int ii = 0; ii < M; ++ii) {
                const int i = (ORDER == 3 && (j & 1)) ? M - 1 - ii : ii;
                c[i][j] = fmaf(a[i], b[j], c[i][j]);
            }
    }
}

// a thread's M x N outputs c[i][j] stored at (row0 + i, col0 + j), each guarded
template <int M, int N>
__device__ __forceinline__ void store_block(elem_t* __restrict__ out, const float (&c)[M][N], int row0, int col0, int n)
{
#pragma unroll
    for (int i = 0; i < M; ++i)
#pragma unroll
        for (int j = 0; j < N; ++j) store_if_inside(out, row0 + i, col0 + j, n, c[i][j]);
}

// a thread's outputs in 4 x 4 chunks: chunk (ci, cj) holds rows row0 + ci * row_step + 0..3 and
// columns col0 + cj * col_step + 0..3 (c[ci * 4 + i][cj * 4 + j]); each row of a chunk is one
// vector store when vec
template <int M, int N>
__device__ __forceinline__ void store_chunks(elem_t* __restrict__ out, const float (&c)[M][N], int row0, int row_step,
                                             int col0, int col_step, int n, bool vec)
{
#pragma unroll
    for (int ci = 0; ci < M / 4; ++ci)
#pragma unroll
        for (int i = 0; i < 4; ++i)
#pragma unroll
            for (int cj = 0; cj < N / 4; ++cj) {
                const float* r = &c[ci * 4 + i][cj * 4];
                store4_if_inside(out, row0 + ci * row_step + i, col0 + cj * col_step, n,
                                 make_float4(r[0], r[1], r[2], r[3]), vec);
            }
}

// ---------------------------------------------------------------- cp.async (the pipelined versions)

__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;" ::: "memory"); }

template <int PENDING>
__device__ __forceinline__ void cp_async_wait_pending()
{
    asm volatile("cp.async.wait_group %0;" ::"n"(PENDING) : "memory");
}

// 8 bytes, or 8 zero bytes when `valid` is false (cp.async.ca: the .cg form copies 16 bytes only)
__device__ __forceinline__ void cp_async8_zfill(u32 dst, const void* src, bool valid)
{
    asm volatile("cp.async.ca.shared.global [%0], [%1], 8, %2;" ::"r"(dst), "l"(src), "r"(valid ? 8u : 0u)
                 : "memory");
}

// four elements m[row][col .. col+3] into shared memory at dst, zeros outside the matrix. With vec
// one asynchronous copy (16 bytes fp32, 8 bytes fp16); without it four guarded loads and a plain
// store, complete when this returns, which the caller's commit/wait/barrier sequence covers too.
__device__ __forceinline__ void copy4_async(elem_t* dst, const elem_t* __restrict__ m, int row, int col, int n,
                                            bool vec)
{
    if (vec) {
        const bool inside = row < n && col < n;
        const elem_t* src = inside ? m + at(row, col, n) : m;  // an address inside the tensor either way
#if ELEM_FP16
        cp_async8_zfill(smem_u32(dst), src, inside);
#else
        cp_async16_zfill(smem_u32(dst), src, inside);
#endif
        return;
    }
#pragma unroll
    for (int j = 0; j < 4; ++j) dst[j] = float_to_elem(load_or_zero(m, row, col + j, n));
}
