// v06: v04 with the sum finished in the same launch: the last block to finish adds the blocks'
// partials in a fixed order (transform.cuh's finish_grid), so a call is one kernel, not two.
//
// v02–v05 launch transform_sum_partials after the main kernel: one more launch and a kernel
// boundary (the GPU drains the first grid before the second starts) on every call. Here every
// block, after writing its partial, draws a ticket with one atomicAdd; the block that draws the
// last one has seen every partial (each block fences before its ticket) and adds them by block
// index, whatever block it is, so the sum keeps its bits from call to call. It then puts the
// counter back to 0 for the next call.

#define TRANSFORM_FAST_MATH 1
#include "transform.cuh"

#ifndef UNROLL
#define UNROLL 4
#endif

extern "C" __global__ void __launch_bounds__(256)
transform_one_launch(const elem_t* __restrict__ x, elem_t* __restrict__ y, double* __restrict__ partials,
                     u32* __restrict__ ticket, double* __restrict__ out, u64 n)
{
    const u64 groups = (n >> 5) << 3;
    finish_grid(x, y, partials, ticket, out, n, groups, grid_loop<UNROLL>(x, y, groups));
}
