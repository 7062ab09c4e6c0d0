// v09: the register-prefetched pipeline of fast SIMT SGEMMs (matmul_prefetch.cuh, which this
// version introduces): slice s + 1 of A and B is loaded from global memory into registers while
// the CTA multiplies slice s out of shared memory, then stored into the other shared stage with
// A's slice transposed (sA[k][m], as v06 had it); one barrier per slice instead of v07's two; and
// each thread reads its values for step k + 1 while the FMAs of step k run.
//
// The lecture's tiles: an L x L tile of C per CTA, S-deep slices; v08's warp regions (WM x WN,
// lanes 8 x 4 of 4 x 4 micro-tiles), so a lane holds (WM/32*4) x (WN/16*4) outputs, 8 x 8 (V = 8)
// by default. What changes against v08: cp.async cannot transpose, so v07 and v08 kept A row-major
// and picked each k out of float4s; staged through registers, A lands k-major and a lane's values
// at one k are two float4 loads of sA and two of sB, 64 FMAs for four shared loads. And the
// registers: the fp32 builds of v07 and v08 take 130 and 169 of them, one CTA per SM; this one is
// held to 128 so that two CTAs of 256 threads share an SM (__launch_bounds__(THREADS, 2)), 16
// warps to hide the barrier and the loads behind.

#include "matmul.cuh"

#ifndef L
#define L 128
#endif
#define BM L  // the header's tile is BM x BN
#define BN L
#ifndef WM
#define WM 64  // rows of a warp's region
#endif
#ifndef S
#define S 8
#endif
#ifndef WN
#define WN 32  // columns of a warp's region
#endif

#include "matmul_prefetch.cuh"

extern "C" __global__ void __launch_bounds__(THREADS, 2)
matmul_transposed_a_prefetch(const elem_t* __restrict__ a, const elem_t* __restrict__ b, elem_t* __restrict__ c, int n)
{
    prefetched_tile(a, b, c, n);
}
