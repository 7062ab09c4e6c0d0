// v04: shared-memory tiles. A CTA computes a BM x BN tile of h_qkv (BM rows of h_in against BN rows
// of w_qkv) in BK-deep slices of i_model; each of its (BM/TM) * (BN/TN) threads holds a TM x TN
// block of the tile in registers.
//
// Slice loads: the CTA reads the BM x BK slice of h_in and the BN x BK slice of w_qkv a quad at a
// time with the quads of a row on neighbouring lanes (BK/4 lanes read a row's 4 * BK contiguous
// bytes), and stores them transposed, i_model-major, into sA[BK][BM + PAD] and sB[BK][BN + PAD],
// so that the inner loop reads a thread's TM rows and TN columns as float4s of one shared row.
// PAD = 4 keeps those reads 16-byte aligned and moves a quad's four transposed stores to other
// banks. Rows and columns past the matrices, and quads past d_model, load as zeros; nothing past
// h_qkv is stored. A thread's outputs go out as float4s (TN is a multiple of 4): neighbouring
// lanes write neighbouring 16-byte runs of a row.

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

extern "C" __global__ void __launch_bounds__(THREADS)
qkv_smem_tiles(const float* __restrict__ w, const float* __restrict__ h, float* __restrict__ out, int d_ws, int d_qkv,
               int d_model)
{
    __shared__ __align__(16) float sA[BK][BM + PAD];
    __shared__ __align__(16) float sB[BK][BN + PAD];
    const int m0 = blockIdx.y * BM, n0 = blockIdx.x * BN;
    const int tx = threadIdx.x % (BN / TN), ty = threadIdx.x / (BN / TN);
    float acc[TM][TN];
#pragma unroll
    for (int i = 0; i < TM; ++i)
#pragma unroll
        for (int j = 0; j < TN; ++j) acc[i][j] = 0.0f;
    for (int k0 = 0; k0 < d_model; k0 += BK) {
        qkv_load_slice<BM>(h, m0, d_ws, k0, d_model, sA);
        qkv_load_slice<BN>(w, n0, d_qkv, k0, d_model, sB);
        __syncthreads();
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
