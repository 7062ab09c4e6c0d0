// v01: one thread per input byte, one atomicAdd into the global histogram per byte.
//
// The baseline every later version is measured against: no reuse, no privatisation. Each of
// the length*channels bytes becomes a read-modify-write at the L2 (global atomics are
// executed by the L2 slices, not the SM), so the kernel is bound by the L2's atomic
// throughput, not by DRAM. A warp's 32 lanes read 32 consecutive bytes (32 channels of one
// row) and update 32 counters 1 KB apart: 32 different L2 sectors per warp instruction.

typedef unsigned char u8;
typedef unsigned int u32;
typedef unsigned long long u64;

#define NUM_BINS 256

extern "C" __global__ void __launch_bounds__(256)
histogram_global_atomics(const u8* __restrict__ data, u32* __restrict__ out, u64 n, u32 channels)
{
    const u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    const u32 channel = (u32)(i % channels);  // row-major: element i is (i / channels, i % channels)
    const u32 value = data[i];
    atomicAdd(&out[channel * NUM_BINS + value], 1u);
}
