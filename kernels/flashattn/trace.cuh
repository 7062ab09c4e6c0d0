// Timeline instrumentation for the persistent kernels, compiled out unless TRACE is 1.
//
// With TRACE 1 a kernel owns the module global g_trace: TRACE_SLOTS 64-bit slots per CTA (CTA b at
// b * TRACE_SLOTS), written by one thread at marked points and read back by the host after the
// launch (tools/trace_probe.py, which reads this layout from this file). Slots 0-4 hold the CTA's %globaltimer (ns) and clock64 at entry
// and exit, and its SM id; slots 5 and 6 the %globaltimer of a kernel's store warps' last copies where it has
// them (v35 on: attn_sm90_store_warps.cuh); unit u (u < TRACE_UNITS) owns the TRACE_PER_UNIT slots from
// TRACE_UNIT0 + u * TRACE_PER_UNIT, each a clock64 value (cycles of this SM: intervals are
// exact within a CTA, while across CTAs only the globaltimer stamps compare). A slot never written
// stays 0. The stores are plain st.global by one lane, one per marked point: with TRACE 0 the
// macros are empty and the kernel is the untraced one instruction for instruction.
#pragma once

#ifndef TRACE
#define TRACE 0
#endif

#define TRACE_MAX_CTAS 160
#define TRACE_UNITS 8
#define TRACE_PER_UNIT 24
#define TRACE_UNIT0 8
#define TRACE_SLOTS (TRACE_UNIT0 + TRACE_UNITS * TRACE_PER_UNIT)

// the slots of a unit (offsets from its first slot)
#define TR_Q_ISSUED 0      // producer: the unit's Q copy issued
#define TR_Q_READY 1       // consumer 0: its Q wait returned
#define TR_S0_DONE 2       // consumer 0: the unit's first S landed
#define TR_STEP1 3         // consumer 0: step j (1..8) begins at TR_STEP1 + j - 1, before its waits
#define TR_LAST_PV 11      // consumer 0: the last P.V landed
#define TR_EPI_DONE 12     // consumer 0: its O stores issued
#define TR_Q_READY_1 13    // consumer 1: its Q wait returned
#define TR_EPI_DONE_1 14   // consumer 1: its O stores issued
#define TR_PREFETCH 15     // producer: the next unit's L2 prefetches issued
#define TR_K0_READY 16     // consumer 0: its wait for the unit's first K tile returned
#define TR_TURN0 17        // consumer 0: its turn for the unit's first S began
#define TR_S0_DONE_1 18    // consumer 1: the unit's first S landed
#define TR_LAST_PV_1 19    // consumer 1: the last P.V landed

#if TRACE
__device__ unsigned long long g_trace[TRACE_MAX_CTAS * TRACE_SLOTS];

__device__ __forceinline__ unsigned long long trace_clock()
{
    unsigned long long t;
    asm volatile("mov.u64 %0, %%clock64;" : "=l"(t)::"memory");
    return t;
}

__device__ __forceinline__ unsigned long long trace_ns()
{
    unsigned long long t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t)::"memory");
    return t;
}

__device__ __forceinline__ unsigned trace_smid()
{
    unsigned s;
    asm volatile("mov.u32 %0, %%smid;" : "=r"(s));
    return s;
}

// at entry and exit (slots 0-1 and 2-3), by thread 0 of the CTA
#define TRACE_ENTRY()                                                                           \
    do {                                                                                        \
        if (threadIdx.x == 0 && blockIdx.x < TRACE_MAX_CTAS) {                                  \
            g_trace[blockIdx.x * TRACE_SLOTS + 0] = trace_ns();                                 \
            g_trace[blockIdx.x * TRACE_SLOTS + 1] = trace_clock();                              \
            g_trace[blockIdx.x * TRACE_SLOTS + 4] = trace_smid();                               \
        }                                                                                       \
    } while (0)
#define TRACE_EXIT()                                                                            \
    do {                                                                                        \
        if (threadIdx.x == 0 && blockIdx.x < TRACE_MAX_CTAS) {                                  \
            g_trace[blockIdx.x * TRACE_SLOTS + 3] = trace_clock();                              \
            g_trace[blockIdx.x * TRACE_SLOTS + 2] = trace_ns();                                 \
        }                                                                                       \
    } while (0)
// slot `what` of unit `unit`, written when `who` (a condition naming one thread) holds
#define TRACE_UNIT(who, unit, what)                                                             \
    do {                                                                                        \
        if ((who) && (unit) < TRACE_UNITS && blockIdx.x < TRACE_MAX_CTAS)                      \
            g_trace[blockIdx.x * TRACE_SLOTS + TRACE_UNIT0 + (unit) * TRACE_PER_UNIT + (what)] = \
                trace_clock();                                                                  \
    } while (0)
#else
#define TRACE_ENTRY() do {} while (0)
#define TRACE_EXIT() do {} while (0)
#define TRACE_UNIT(who, unit, what) do {} while (0)
#endif
