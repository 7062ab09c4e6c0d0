// v35's epilogue: a consumer warpgroup stages its O / l block in shared memory (v21's stmatrix into
// v21's swizzled buffer) and hands it to a warp of the producer warpgroup, which writes it out to
// global memory while the consumer goes on to its next unit. What it does and why is in
// v35_store_warps.cu.
//
// The hand-off uses two named barriers per consumer warpgroup cw, each of its 128 threads and the 32
// of producer warp 2 + cw: STORE_FULL_BAR0 + cw (the consumer arrives once its block is staged, the
// store warp waits) and STORE_FREE_BAR0 + cw (the store warp arrives once it has read the buffer, the
// consumer waits before staging its next block; the store warp's first arrive stands for the empty
// buffer at the start). Include it after attn_sm90_staged_store.cuh (its buffer, layout and stage_o).
//
// Append-only: once a recorded version builds it, a helper here is never changed in place (`report
// same-code` proves that a version's kernel still compiles to the machine code its records ran).
#pragma once

#define STORE_FULL_BAR0 5  // named barriers 5-6: consumer cw's block is staged
#define STORE_FREE_BAR0 7  // named barriers 7-8: consumer cw's buffer has been read out
#define STORE_BAR_THREADS 160  // a consumer warpgroup and one store warp

// STORE_O: the consumer's half of the epilogue. o0 (the block's place in O) is the store warp's to
// find from the unit; the consumer only waits for its buffer, stages the block and arrives.
__device__ __forceinline__ void store_o_handoff(const float (&o)[64], float inv0, float inv1, u16*, int lane)
{
    const int cw = (int)(threadIdx.x / 128), warp = (int)(threadIdx.x & 127) >> 5;
    asm volatile("bar.sync %0, %1;" ::"r"(STORE_FREE_BAR0 + cw), "n"(STORE_BAR_THREADS) : "memory");
    stage_o(o, inv0, inv1, stage_buffer(cw), warp, lane);
    asm volatile("bar.arrive %0, %1;" ::"r"(STORE_FULL_BAR0 + cw), "n"(STORE_BAR_THREADS) : "memory");
}

// DQ_STORE_WARPS: producer warps 2 and 3 (idle in produce_units) write consumer 0's and consumer 1's
// blocks, unit by unit in the consumers' order, two whole 256-byte rows a warp instruction. The other
// producer warps return at once.
__device__ __forceinline__ void store_warps(u16* O, int seqlen, int units_per_head, int n_units, int cluster_id,
                                            int n_clusters, u32 rank)
{
    const int pw = (int)(threadIdx.x % 128) / 32;
    if (pw < 2 || cluster_id >= n_units) return;
    const int cw = pw - 2, lane = (int)(threadIdx.x & 31);
    const u32 stage = stage_buffer(cw);
    asm volatile("bar.arrive %0, %1;" ::"r"(STORE_FREE_BAR0 + cw), "n"(STORE_BAR_THREADS) : "memory");
    for (int w = cluster_id; w < n_units; w += n_clusters) {
        const int head = w / units_per_head;
        const int q0 = ((w % units_per_head) * CLUSTER + (int)rank) * BLOCK_M;
        u16* block = O + ((u64)head * (u64)seqlen + q0 + cw * 64) * HEAD_DIM;
        asm volatile("bar.sync %0, %1;" ::"r"(STORE_FULL_BAR0 + cw), "n"(STORE_BAR_THREADS) : "memory");
        // a warp instruction covers rows r0 + 0-1 (lanes 0-15 and 16-31, 16-byte chunk lane % 16), the
        // next one rows r0 + 2-3: two loads in flight at a time (the producer warpgroup has 24 registers)
#pragma unroll 1
        for (int r0 = 0; r0 < 64; r0 += 4) {
            const int r = r0 + (lane >> 4), c = lane & 15;
            u32 a0, b0, x0, y0, a1, b1, x1, y1;
            ld_shared_v4(stage + stage_at(r, c), a0, b0, x0, y0);
            ld_shared_v4(stage + stage_at(r + 2, c), a1, b1, x1, y1);
            st_global_v4(block + r * HEAD_DIM + 8 * c, a0, b0, x0, y0);
            st_global_v4(block + (r + 2) * HEAD_DIM + 8 * c, a1, b1, x1, y1);
        }
        // the buffer is read (every load's value has been stored): the consumer may stage its next block
        if (w + n_clusters < n_units)
            asm volatile("bar.arrive %0, %1;" ::"r"(STORE_FREE_BAR0 + cw), "n"(STORE_BAR_THREADS) : "memory");
    }
#if TRACE
    // the CTA's last stores issued: slot 5 (warp 2) and 6 (warp 3), %globaltimer like the exit's slot 2
    if (lane == 0 && blockIdx.x < TRACE_MAX_CTAS) g_trace[blockIdx.x * TRACE_SLOTS + 5 + cw] = trace_ns();
#endif
}
