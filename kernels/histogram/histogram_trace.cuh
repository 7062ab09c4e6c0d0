// Stamps of a traced build (TRACE defined, as tools/histogram_trace_probe.py builds a version): per block,
// the global timer and the SM clock at entry, when its counting is done, when its warps have issued its
// flush, and when a fence says the flush's atomics are performed, into g_trace (TRACE_WORDS words a
// block, timer and clock interleaved; the tool reads the layout from here). Without TRACE the hooks are
// empty: an untraced build's code is the version's own.
//
// Append-only, as histogram.cuh.
#pragma once

#include "common/sm90/ptx.cuh"  // global_timer_ns (included either way: a source's closure is its #include lines)

#define TRACE_WORDS 8          // (timer, clock) at entry, counted, flush issued, flush performed
#define TRACE_MAX_BLOCKS 1024  // blocks past this one are not stamped

#ifdef TRACE
__device__ u64 g_trace[TRACE_MAX_BLOCKS * TRACE_WORDS];

__device__ __forceinline__ void trace_stamp(u32 i)
{
    if (threadIdx.x == 0 && blockIdx.x < TRACE_MAX_BLOCKS) {
        g_trace[blockIdx.x * TRACE_WORDS + 2 * i] = global_timer_ns();
        g_trace[blockIdx.x * TRACE_WORDS + 2 * i + 1] = clock64();
    }
}

#define TRACE_ENTRY() trace_stamp(0)
#define TRACE_COUNTED() trace_stamp(1)  // after the counting's closing __syncthreads
// every warp has issued its flush; then a fence returns once this thread's atomics are performed
#define TRACE_FLUSHED()       \
    do {                      \
        __syncthreads();      \
        trace_stamp(2);       \
        __threadfence();      \
        __syncthreads();      \
        trace_stamp(3);       \
    } while (0)
#else
#define TRACE_ENTRY()
#define TRACE_COUNTED()
#define TRACE_FLUSHED()
#endif
