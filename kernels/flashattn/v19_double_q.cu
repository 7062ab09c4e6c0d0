// v19: v17's persistent kernel with two Q buffers, so the next unit's Q is loaded a whole unit
// ahead instead of in the gap between two units.
//
// v18's trace (tools/trace_probe.py on test_small) showed where v17 loses its time: not in the
// kv steps but at each unit boundary, where consumer 0 sits idle for several microseconds. Q has
// one buffer, released only when the last S of the unit has landed in both consumers; the fresh
// Q block then comes from DRAM while every CTA of the grid asks for its own at the same moment.
// Here Q has two buffers (unit u in buffer u % 2) with a full and an empty mbarrier each, and a
// second warp of the producer warpgroup, the Q warp, loads unit u + 1's Q as soon as unit u - 1
// has released that buffer: a unit's worth of time before it is needed. The K/V lane's loop is
// v17's without the Q loads.
//
// Shared memory: Q 2 x 32 KB + 2 stages x (K + V) of BLOCK_N rows. With v15's 176-row tiles that
// is 241 KB, over the 227 KB a block may have, so v19 takes 128-row tiles (193 KB), which on
// test_small also tile the 1024 keys exactly (8 steps, no masked tail).
//
// The first loads of a launch come in the order they are needed (FIRST_LOADS_IN_ORDER): every CTA
// asks DRAM for its Q and first K tile at the same moment, and the rest of the ring and the second
// Q would otherwise share that bandwidth with them while the tensor cores wait.
//
// The epilogue is a hook: STORE_O names the function that writes a consumer's 64 x 128 block of
// O (by default store_o_pairs, v17's st.global of f16x2 pairs); a later version replaces only
// that. With TRACE 1 the kernel stamps its timeline into g_trace (trace.cuh). The kernel is in
// attn_sm90_double_q.cuh, which v20 and v21 build with their own epilogues.

#include "attn_sm90_double_q.cuh"
