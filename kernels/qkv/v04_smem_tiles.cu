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

#include "qkv_tiles.cuh"

extern "C" __global__ void __launch_bounds__(THREADS)
qkv_smem_tiles(const float* __restrict__ w, const float* __restrict__ h, float* __restrict__ out, int d_ws, int d_qkv,
               int d_model)
{
    qkv_tile(w, h, out, d_ws, d_qkv, d_model);
}
