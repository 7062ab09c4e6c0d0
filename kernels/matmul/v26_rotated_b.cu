// v26: v17's kernel with B's quads stored into shared memory rotated by one element (B_ROTATE,
// matmul_prefetch_vec.cuh) and rotated back as each step reads them, so that the registers a step
// reads B into no longer sit in the same register banks as the accumulators they are added to.
//
// Why it matters: the vector epilogue stores each row of a lane's outputs as float4s, so ptxas keeps
// a row's four accumulators in an aligned quad of registers, and a step's LDS.128 of B fills another
// aligned quad. In v17's machine code acc[i][j] and b[j] therefore share register index mod 4 in
// every FMA of the loop; with a[i] held in the operand reuse cache, the two registers each FMA still
// fetches meet in one bank. Rotating sB's quads moves b[j] to the neighbouring register of its quad;
// the rotation is folded into the registers each thread stores its quad of B from, so the loop is
// v17's 1,108 instructions a slice.

#include "matmul.cuh"

#include "matmul_tiles_v17.cuh"
#ifndef S
#define S 8
#endif
#ifndef B_ROTATE
#define B_ROTATE 1
#endif

#include "matmul_prefetch_vec.cuh"

#define CTAS_PER_SM (BM * BN <= 128 * 128 ? 2 : 1)

extern "C" __global__ void __launch_bounds__(THREADS, CTAS_PER_SM)
matmul_rotated_b(const elem_t* __restrict__ a, const elem_t* __restrict__ b, elem_t* __restrict__ c, int n)
{
    vec_tile(a, b, c, n);
}
