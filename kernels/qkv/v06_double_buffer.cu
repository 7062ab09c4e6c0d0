// v06: v04's tiles with the slices double-buffered: two shared buffers a side, and the next slice's
// quads loaded into registers before the current slice's multiply-adds (qkv_fetch_slice), stored
// into the other buffer after them (qkv_put_slice); one barrier a slice. The global loads of slice
// s + 1 are in flight while slice s is multiplied, where v04 waits for every load at a barrier.
// The tile's shape for layer 1 is the recorded sweep's choice.

#include "qkv_tiles.cuh"

extern "C" __global__ void __launch_bounds__(THREADS)
qkv_double_buffer(const float* __restrict__ w, const float* __restrict__ h, float* __restrict__ out, int d_ws,
                  int d_qkv, int d_model)
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
