// v23: v17's tiles, lanes and step loop, fed by a cp.async ring with A transposed on its way in
// (matmul_cp_async_transposed.cuh): 4-byte copies put each element of A at its place in the
// k-major sA, 16-byte copies bring B's rows; no register carries a slice from global to shared
// memory, and the warps never wait on a global load. Tiles 256 x 128 x 8, warps of 128 x 32
// (16 x 8 a lane) unless CONFIG says; STAGES slices in flight.

#include "matmul.cuh"

#include "matmul_tiles_v17.cuh"
#ifndef S
#define S 8
#endif
#ifndef STAGES
#define STAGES 3
#endif

#include "matmul_cp_async_transposed.cuh"

extern "C" __global__ void __launch_bounds__(THREADS, 1)
matmul_cp_async_transposed(const elem_t* __restrict__ a, const elem_t* __restrict__ b, elem_t* __restrict__ c, int n)
{
    transposed_ring_tile(a, b, c, n);
}
