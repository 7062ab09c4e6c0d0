// mbarriers in shared memory (PTX ISA "mbarrier"): init, arrive (plain and with an expected
// transaction count), try_wait, and the waits built on it, which turn a deadlock into a launch
// error after HANG_NS nanoseconds of the global timer.
//
// Configuration macros, read where this header is included (define them before it):
//   HANG_NS     the wait's time limit in ns (default 2000000000ull: 2 s, as every version has it);
//   HANG_CHECK  mbar_wait: 1 faults after HANG_NS, 0 waits for ever (default 1);
//   HANG_TRAP   mbar_wait_trap: 1 traps after HANG_NS, 0 waits for ever (default 1).
//
// Append-only: a helper here, once a recorded version uses it, is never changed in place. A
// different behaviour gets a new helper with its own name (mbar_wait_trap is v06-v07's wait,
// mbar_wait the faulting one that replaced it from v08 on), and a version calls the one it used.
#pragma once

#include "common/sm90/ptx.cuh"

#ifndef HANG_NS
#define HANG_NS 2000000000ull
#endif
#ifndef HANG_CHECK
#define HANG_CHECK 1
#endif
#ifndef HANG_TRAP
#define HANG_TRAP 1
#endif

__device__ __forceinline__ void mbar_init(u32 bar, u32 count)
{
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(bar), "r"(count) : "memory");
}

__device__ __forceinline__ void mbar_arrive(u32 bar)
{
    asm volatile("{ .reg .b64 st; mbarrier.arrive.shared::cta.b64 st, [%0]; }" ::"r"(bar) : "memory");
}

__device__ __forceinline__ void mbar_arrive_expect_tx(u32 bar, u32 bytes)
{
    asm volatile("{ .reg .b64 st; mbarrier.arrive.expect_tx.shared::cta.b64 st, [%0], %1; }" ::"r"(bar), "r"(bytes)
                 : "memory");
}

__device__ __forceinline__ u32 mbar_try_wait(u32 bar, u32 parity)
{
    u32 ok;
    asm volatile("{ .reg .pred p; mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2; selp.u32 %0, 1, 0, p; }"
                 : "=r"(ok)
                 : "r"(bar), "r"(parity)
                 : "memory");
    return ok;
}

// Wait for the phase of parity `parity` of the mbarrier at `bar` (called by all 32 lanes of a
// warp). With HANG_TRAP, a wait longer than HANG_NS (global timer) executes trap: a deadlock
// becomes a launch error. The __syncwarp reconverges the warp before the .sync.aligned wgmma
// instructions that follow the waits. (v06-v07; from v08 on, mbar_wait: see there why not trap.)
__device__ __forceinline__ void mbar_wait_trap(u32 bar, u32 parity)
{
    if (!mbar_try_wait(bar, parity)) {
#if HANG_TRAP
        const u64 t0 = global_timer_ns();
#endif
        while (!mbar_try_wait(bar, parity)) {
#if HANG_TRAP
            if (global_timer_ns() - t0 > HANG_NS) asm volatile("trap;");
#endif
        }
    }
    __syncwarp();
}

// Wait for the phase of parity `parity` of the mbarrier at `bar` (called by all 32 lanes of a
// warp). With HANG_CHECK, a wait longer than HANG_NS (global timer) stores to address 0: the
// fault aborts the grid with "an illegal memory access", so a deadlock becomes a launch error
// instead of a hung process. Not `trap`: a trap anywhere in the consumers' code makes ptxas
// budget their wgmma pipeline with the 168 registers of the kernel's entry instead of the 240
// of setmaxnreg (C7512 "wgmma serialized due to insufficient register resources", 232 B of
// spills; see v08_overlap.py). The __syncwarp reconverges the warp before the .sync.aligned wgmma
// instructions that follow the waits.
__device__ __forceinline__ void hang_fault()
{
    asm volatile("{ .reg .u64 z; mov.u64 z, 0; st.volatile.global.u32 [z], 1; }" ::: "memory");
}

__device__ __forceinline__ void mbar_wait(u32 bar, u32 parity)
{
    if (!mbar_try_wait(bar, parity)) {
#if HANG_CHECK
        const u64 t0 = global_timer_ns();
#endif
        while (!mbar_try_wait(bar, parity)) {
#if HANG_CHECK
            if (global_timer_ns() - t0 > HANG_NS) hang_fault();
#endif
        }
    }
    __syncwarp();
}
