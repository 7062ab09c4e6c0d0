// The configuration of the sm_90a flashattn kernels of v06-v14: a producer warpgroup and two
// consumer warpgroups on 128 query rows, D = 128, a STAGES-deep K/V ring in 128-byte-swizzled
// shared memory. Each macro is a default (`#ifndef`) that a version's CONFIG / SWEEP or a
// `-D` overrides; a version that needs another default defines it before including this header
// (the first definition wins, as in the preprocessor).
//
// Geometry the including file may set first:
//   BLOCK_N     kv rows per tile (default 128; v12 takes 176, with the partial last tile masked);
//   Q_IN_SMEM   1: Q has a 32 KB tile in shared memory and a barrier (default); 0: it has neither (v11);
//   Q_BARRIERS  the mbarriers ahead of the K/V ring's (default Q_IN_SMEM; v09 has Q full and Q empty);
//   PRODUCER_THREADS  the producer's threads (default 128, a warpgroup; v07 can take one warp).
#pragma once

#ifndef STAGES
#define STAGES 2                 // K/V ring depth (2: 160 KB smem, 3: 224 KB)
#endif
#ifndef K_LBO
#define K_LBO 16                 // Q/K descriptors (K-major, 128B swizzle): unused by the hardware
#endif
#ifndef K_SBO
#define K_SBO 1024               // 8 rows x 128 B between core-matrix groups
#endif
#ifndef V_LBO
#define V_LBO KV_HALF_BYTES      // V descriptor (MN-major): between the two 64-wide d halves
#endif
#ifndef V_SBO
#define V_SBO 1024               // between 8-row kv groups
#endif
#ifndef SWIZZLE_MODE
#define SWIZZLE_MODE 1           // descriptor bits 62-63: 1 = 128-byte swizzle
#endif
#ifndef V_TRANS
#define V_TRANS 1                // imm-trans-b of the P.V product (1: V is N-major)
#endif
#ifndef HANG_CHECK
#define HANG_CHECK 1             // a wait longer than HANG_NS faults instead of hanging (not trap: see mbar_wait)
#endif
#ifndef HANG_NS
#define HANG_NS 2000000000ull
#endif
#ifndef PRODUCER_REGS
#define PRODUCER_REGS 24
#endif
#ifndef CONSUMER_REGS
#define CONSUMER_REGS 240
#endif
#ifndef PROXY_FENCE
#define PROXY_FENCE 1            // fence.proxy.async after each full-barrier wait (cp.async fills; 0 with TMA)
#endif
#ifndef PINGPONG
#define PINGPONG 1               // 0: no turns between the consumer warpgroups (ablation)
#endif
#ifndef TURN_BAR0
#define TURN_BAR0 1              // named barriers TURN_BAR0 (consumer 0's turn) and TURN_BAR0 + 1; 0 is __syncthreads
#endif
#ifndef Q_IN_SMEM
#define Q_IN_SMEM 1
#endif

#define HEAD_DIM 128
#define BLOCK_M 128
#ifndef BLOCK_N
#define BLOCK_N 128
#endif
#if BLOCK_N != 128 && BLOCK_N != 176 && BLOCK_N != 64
#error "BLOCK_N must be 64, 128 or 176 (the S accumulator's wgmma operand lists are written for those)"
#endif
#define S_REGS (BLOCK_N / 2)     // f32 S accumulator registers per thread (64 x BLOCK_N / 128 threads)
#define P_REGS (BLOCK_N / 4)     // f16x2 P fragment registers per thread
#ifndef PRODUCER_THREADS
#define PRODUCER_THREADS 128
#endif
#define THREADS (256 + PRODUCER_THREADS)   // consumers are warpgroups 0 and 1 (warps 0-7), then the producer
#define TILE_BYTES 32768         // the Q tile: 128 rows x 128 fp16
#define HALF_BYTES 16384         // one 64-column half of it: 128 rows x 128 B
#define KV_TILE_BYTES (BLOCK_N * 256)   // a K or V tile: BLOCK_N rows x 128 fp16 (1024-aligned)
#define KV_HALF_BYTES (BLOCK_N * 128)   // one 64-column half of it
#ifndef Q_BARRIERS
#define Q_BARRIERS Q_IN_SMEM
#endif
#define NUM_BARRIERS (Q_BARRIERS + 4 * STAGES)
// host side must allocate the same: 1024 (alignment slack) + tiles + barriers
#define SMEM_BYTES (1024 + Q_IN_SMEM * TILE_BYTES + 2 * STAGES * KV_TILE_BYTES + 8 * NUM_BARRIERS)

#if SMEM_BYTES > 227 * 1024
#error "STAGES too deep: the tiles do not fit in the 227 KB of shared memory a block can opt in to"
#endif
// __launch_bounds__(384, 1) makes ptxas allocate 168 registers per thread at launch
// (65536 / 384, rounded down to a multiple of 8): a pool of 3 x 168 per warpgroup-thread
// that setmaxnreg can only redistribute. setmaxnreg.inc blocks until the registers it asks
// for were freed by a .dec, so asking for more than the pool hangs the CTA (no trap can
// catch that): 24 + 2 x 240 = 504 = 3 x 168 exactly, FlashAttention-3's split.
#if PRODUCER_THREADS == 128 && PRODUCER_REGS + 2 * CONSUMER_REGS > 3 * 168
#error "PRODUCER_REGS + 2 * CONSUMER_REGS must not exceed the 3 x 168 registers allocated at launch"
#endif
#if PRODUCER_REGS % 8 || CONSUMER_REGS % 8 || PRODUCER_REGS < 24 || CONSUMER_REGS > 256
#error "setmaxnreg needs a multiple of 8 in 24..256"
#endif
