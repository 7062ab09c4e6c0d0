// v05: v04's tiles (qkv_tiles.cuh, the same kernel body), launched from a plan packed once per shape
// (v05_lean_launch.py). The device code is v04's; the host's part of a call is what changes.

#include "qkv_tiles.cuh"

extern "C" __global__ void __launch_bounds__(THREADS)
qkv_lean_launch(const float* __restrict__ w, const float* __restrict__ h, float* __restrict__ out, int d_ws, int d_qkv,
                int d_model)
{
    qkv_tile(w, h, out, d_ws, d_qkv, d_model);
}
