// v01: one thread per element, blocks of 256; the sum in two deterministic passes.
//
// Thread i reads x[i] (and x[i - 16] where i % 32 >= 16) from global memory, picks f by i % 4
// with a switch (the four lanes of a group diverge), and writes y[i]. A thread with i % 4 == 0
// also computes its group's cos term (element i + 1, its own reads) and keeps its sin term when
// the cos term is over 0.5. The block sums its terms in double in a fixed order
// (block_sum_fixed) and writes one partial; transform_sum_partials adds the partials in a fixed
// order. No atomics: the sum has the same bits on every call.

#include "transform.cuh"

extern "C" __global__ void __launch_bounds__(256)
transform_naive(const elem_t* __restrict__ x, elem_t* __restrict__ y, double* __restrict__ partials, u64 n)
{
    const u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x;
    double term = 0.0;
    if (i < n) {
        const float v = transform_one(x, i);
        y[i] = from_f(v);
        if ((i & 3) == 0 && i + 1 < n && transform_one(x, i + 1) > 0.5f) term = v;
    }
    const double s = block_sum_fixed(term);
    if (threadIdx.x == 0) partials[blockIdx.x] = s;
}
