// v04's layout of a block's counters in shared memory (what and why: v04_bank_spread.cu): 128
// channels per block, bin-major, the counter of (channel 4*lane + j, value b) in bank lane
// whatever the data; and the padded tile per warp that its flush (flush_bin_major in
// histogram.cuh) transposes through. v04, v05 and v06 count in it.
//
// Define THREADS, WARPS and the counting loop's BATCH or UNROLL first; includes histogram.cuh,
// whose word-load helpers these macros configure.
//
// Changed in place only with the PTX of every build of every version that includes it unchanged
// (tools/same_ptx.py; `report same-code` proves it for the recorded runs).
#pragma once

#define GROUP 128                       // channels per block: 32 lanes x 4 bytes
#define HIST_WORDS (GROUP * NUM_BINS)   // 32768 counters, 128 KB
#define TILE_PITCH 9                    // words per tile row: 8 values + 1 pad
#define TILE_WORDS (32 * TILE_PITCH)

// counter of (channel 4*lane + j, value b) at byte b*512 + j*128 + lane*4: bin-major, bank = lane
#define LANE_BYTES 4
#define J_BYTES (32 * 4)
#define VALUE_SHIFT 9

#include "histogram.cuh"
