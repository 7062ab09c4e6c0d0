// v06: v04's tiles with the slices double-buffered: two shared buffers a side, and the next slice's
// quads loaded into registers before the current slice's multiply-adds (qkv_fetch_slice), stored
// into the other buffer after them (qkv_put_slice); one barrier a slice. The global loads of slice
// s + 1 are in flight while slice s is multiplied, where v04 waits for every load at a barrier.
// The tile's shape for layer 1 is the recorded sweep's choice. The body is qkv_double_buffer_tile
// (qkv_tiles.cuh), which v07 runs too.

#include "qkv_tiles.cuh"

extern "C" __global__ void __launch_bounds__(THREADS)
qkv_double_buffer(const float* __restrict__ w, const float* __restrict__ h, float* __restrict__ out, int d_ws,
                  int d_qkv, int d_model)
{
    qkv_double_buffer_tile(w, h, out, d_ws, d_qkv, d_model);
}
