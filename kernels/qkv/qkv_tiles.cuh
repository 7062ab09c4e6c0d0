// Shared-memory tiles of h_qkv (v04 on): a CTA computes a BM x BN tile of h_qkv (BM rows of h_in
// against BN rows of w_qkv) in BK-deep slices of i_model; each of its (BM/TM) * (BN/TN) threads
// holds a TM x TN block of the tile in registers.
//
// qkv_load_slice: the CTA reads a ROWS x BK slice a quad at a time with the quads of a row on
// neighbouring lanes (BK/4 lanes read a row's 4 * BK contiguous bytes) and stores it transposed,
// i_model-major, into s[BK][ROWS + PAD], so that the inner loop reads a thread's TM rows and TN
// columns as float4s of one shared row. PAD = 4 keeps those reads 16-byte aligned and moves a
// quad's four transposed stores to other banks. Rows past the matrix, and quads past d_model, load
// as zeros.
// qkv_tile: one slice after another, loads and multiply-adds alternating (a barrier between), then
// the thread's outputs as float4s (TN is a multiple of 4), nothing past h_qkv stored.
//
// Reads BM, BN, BK, TM and TN (defaults below). Append-only once a version is recorded.
#pragma once

#include "qkv.cuh"

#ifndef BM
#define BM 64
#endif
#ifndef BN
#define BN 96
#endif
#ifndef BK
#define BK 32
#endif
#ifndef TM
#define TM 4
#endif
#ifndef TN
#define TN 4
#endif
#define PAD 4
#define THREADS ((BM / TM) * (BN / TN))

static_assert(TN % 4 == 0 && TM % 4 == 0 && BK % 4 == 0, "TM, TN and BK are multiples of 4");

template <int ROWS>
__device__ __forceinline__ void qkv_load_slice(const float* __restrict__ m, int row0, int rows, int k0, int d_model,
                                               float (*s)[ROWS + PAD])
{
    constexpr int QUADS = ROWS * BK / 4;
#pragma unroll
    for (int f = threadIdx.x; f < QUADS; f += THREADS) {
        const int r = f / (BK / 4), q = f % (BK / 4);
        const int row = row0 + r, k = k0 + 4 * q;
        float4 v = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
        if (row < rows && k < d_model) v = *reinterpret_cast<const float4*>(m + qkv_at(row, k, d_model));
        s[4 * q + 0][r] = v.x;
        s[4 * q + 1][r] = v.y;
        s[4 * q + 2][r] = v.z;
        s[4 * q + 3][r] = v.w;
    }
}

// a thread's TM x TN multiply-adds over one slice held in shared memory
__device__ __forceinline__ void qkv_slice_fma(const float (*sA)[BM + PAD], const float (*sB)[BN + PAD], int ty, int tx,
                                              float (&acc)[TM][TN])
{
#pragma unroll
    for (int k = 0; k < BK; ++k) {
        float a[TM], b[TN];
#pragma unroll
        for (int i = 0; i < TM; i += 4) *reinterpret_cast<float4*>(a + i) = *reinterpret_cast<const float4*>(&sA[k][ty * TM + i]);
#pragma unroll
        for (int j = 0; j < TN; j += 4) *reinterpret_cast<float4*>(b + j) = *reinterpret_cast<const float4*>(&sB[k][tx * TN + j]);
#pragma unroll
        for (int i = 0; i < TM; ++i)
#pragma unroll
            for (int j = 0; j < TN; ++j) acc[i][j] = fmaf(a[i], b[j], acc[i][j]);
    }
}

// a thread's TM x TN outputs, as float4s where a run of four lies inside h_qkv and d_qkv keeps it aligned
__device__ __forceinline__ void qkv_store_block(float* __restrict__ out, int m0, int n0, int ty, int tx, int d_ws,
                                                int d_qkv, const float (&acc)[TM][TN])
{
#pragma unroll
    for (int i = 0; i < TM; ++i) {
        const int row = m0 + ty * TM + i;
        if (row >= d_ws) break;
#pragma unroll
        for (int j = 0; j < TN; j += 4) {
            const int col = n0 + tx * TN + j;
            float* p = out + qkv_at(row, col, d_qkv);
            if (col + 3 < d_qkv && (d_qkv % 4) == 0) {
                *reinterpret_cast<float4*>(p) = make_float4(acc[i][j], acc[i][j + 1], acc[i][j + 2], acc[i][j + 3]);
            } else {
#pragma unroll
                for (int c = 0; c < 4; ++c)
                    if (col + c < d_qkv) p[c] = acc[i][j + c];
            }
        }
    }
}

__device__ __forceinline__ void qkv_tile(const float* __restrict__ w, const float* __restrict__ h, float* __restrict__ out,
                                         int d_ws, int d_qkv, int d_model)
{
    __shared__ __align__(16) float sA[BK][BM + PAD];
    __shared__ __align__(16) float sB[BK][BN + PAD];
    const int m0 = blockIdx.y * BM, n0 = blockIdx.x * BN;
    const int tx = threadIdx.x % (BN / TN), ty = threadIdx.x / (BN / TN);
    float acc[TM][TN];
    qkv_zero(acc);
    for (int k0 = 0; k0 < d_model; k0 += BK) {
        qkv_load_slice<BM>(h, m0, d_ws, k0, d_model, sA);
        qkv_load_slice<BN>(w, n0, d_qkv, k0, d_model, sB);
        __syncthreads();
        // qkv_slice_fma's loop written out: through that function's pointer parameters ptxas makes other
        // machine code of it, and v04's and v05's recorded figures are of this code
#pragma unroll
        for (int k = 0; k < BK; ++k) {
            float a[TM], b[TN];
#pragma unroll
            for (int i = 0; i < TM; i += 4) *reinterpret_cast<float4*>(a + i) = *reinterpret_cast<const float4*>(&sA[k][ty * TM + i]);
#pragma unroll
            for (int j = 0; j < TN; j += 4) *reinterpret_cast<float4*>(b + j) = *reinterpret_cast<const float4*>(&sB[k][tx * TN + j]);
#pragma unroll
            for (int i = 0; i < TM; ++i)
#pragma unroll
                for (int j = 0; j < TN; ++j) acc[i][j] = fmaf(a[i], b[j], acc[i][j]);
        }
        __syncthreads();
    }
    qkv_store_block(out, m0, n0, ty, tx, d_ws, d_qkv, acc);
}

// qkv_load_slice in two halves, for a loop that keeps the next slice's loads in flight during the
// current slice's multiply-adds: qkv_fetch_slice reads this thread's quads of a ROWS x BK slice into
// registers (zeros past the matrix), qkv_put_slice stores them transposed as qkv_load_slice does.
#define QKV_SLICE_QUADS(ROWS) ((ROWS) * BK / 4)
#define QKV_QUADS_PER_THREAD(ROWS) ((QKV_SLICE_QUADS(ROWS) + THREADS - 1) / THREADS)

template <int ROWS>
__device__ __forceinline__ void qkv_fetch_slice(const float* __restrict__ m, int row0, int rows, int k0, int d_model,
                                                float4 (&r)[QKV_QUADS_PER_THREAD(ROWS)])
{
#pragma unroll
    for (int i = 0; i < QKV_QUADS_PER_THREAD(ROWS); ++i) {
        const int f = threadIdx.x + i * THREADS;
        const int row = row0 + f / (BK / 4), k = k0 + 4 * (f % (BK / 4));
        r[i] = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
        if (f < QKV_SLICE_QUADS(ROWS) && row < rows && k < d_model)
            r[i] = *reinterpret_cast<const float4*>(m + qkv_at(row, k, d_model));
    }
}

template <int ROWS>
__device__ __forceinline__ void qkv_put_slice(const float4 (&r)[QKV_QUADS_PER_THREAD(ROWS)], float (*s)[ROWS + PAD])
{
#pragma unroll
    for (int i = 0; i < QKV_QUADS_PER_THREAD(ROWS); ++i) {
        const int f = threadIdx.x + i * THREADS;
        if (f < QKV_SLICE_QUADS(ROWS)) {
            const int row = f / (BK / 4), q = f % (BK / 4);
            s[4 * q + 0][row] = r[i].x;
            s[4 * q + 1][row] = r[i].y;
            s[4 * q + 2][row] = r[i].z;
            s[4 * q + 3][row] = r[i].w;
        }
    }
}

// qkv_double_buffer_tile: one CTA's BM x BN tile with its slices double-buffered (v06 on): two shared
// buffers a side; before a slice's multiply-adds each thread loads its quads of the next slice into
// registers (qkv_fetch_slice) and after them stores those into the other buffer (qkv_put_slice), so
// one barrier a slice and the next slice's global loads in flight during this slice's arithmetic.
__device__ __forceinline__ void qkv_double_buffer_tile(const float* __restrict__ w, const float* __restrict__ h,
                                                       float* __restrict__ out, int d_ws, int d_qkv, int d_model)
{
    __shared__ __align__(16) float sA[2][BK][BM + PAD];
    __shared__ __align__(16) float sB[2][BK][BN + PAD];
    const int m0 = blockIdx.y * BM, n0 = blockIdx.x * BN;
    const int tx = threadIdx.x % (BN / TN), ty = threadIdx.x / (BN / TN);
    float acc[TM][TN];
    qkv_zero(acc);
    float4 ra[QKV_QUADS_PER_THREAD(BM)], rb[QKV_QUADS_PER_THREAD(BN)];
    qkv_fetch_slice<BM>(h, m0, d_ws, 0, d_model, ra);
    qkv_fetch_slice<BN>(w, n0, d_qkv, 0, d_model, rb);
    qkv_put_slice<BM>(ra, sA[0]);
    qkv_put_slice<BN>(rb, sB[0]);
    __syncthreads();
    int cur = 0;
    for (int k0 = 0; k0 < d_model; k0 += BK) {
        const bool more = k0 + BK < d_model;
        if (more) {
            qkv_fetch_slice<BM>(h, m0, d_ws, k0 + BK, d_model, ra);
            qkv_fetch_slice<BN>(w, n0, d_qkv, k0 + BK, d_model, rb);
        }
        qkv_slice_fma(sA[cur], sB[cur], ty, tx, acc);
        if (more) {
            qkv_put_slice<BM>(ra, sA[cur ^ 1]);
            qkv_put_slice<BN>(rb, sB[cur ^ 1]);
        }
        __syncthreads();
        cur ^= 1;
    }
    qkv_store_block(out, m0, n0, ty, tx, d_ws, d_qkv, acc);
}
