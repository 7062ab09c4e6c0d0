// v07: v06's double-buffered tile (qkv_double_buffer_tile) with the CTAs an SM chosen: the launch bounds
// ask ptxas for MIN_CTAS resident CTAs of THREADS threads, which caps a thread's registers at
// 65536 / (MIN_CTAS * THREADS). v06's 128 x 96 tile took 107 registers a thread, so one CTA of 12 warps
// ran on an SM and its 384 tiles took three rounds on 132 SMs; the sweep sets tile and CTAs an SM
// together (the homework's blocks per SM).

#include "qkv_tiles.cuh"

#ifndef MIN_CTAS
#define MIN_CTAS 1
#endif

extern "C" __global__ void __launch_bounds__(THREADS, MIN_CTAS)
qkv_occupancy(const float* __restrict__ w, const float* __restrict__ h, float* __restrict__ out, int d_ws,
              int d_qkv, int d_model)
{
    qkv_double_buffer_tile(w, h, out, d_ws, d_qkv, d_model);
}
