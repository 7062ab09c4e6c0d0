// v09: v07's ring refilled before the threads compute a tile instead of after.
//
// In v07 (and v08, which launches v07's kernel) thread 0 refills the stage of tile k-1 only
// after the block has computed tile k and thread 0 has issued tile k's store. While the block
// computes tile k, the loads in flight are those of tiles k+1 .. k+STAGES-2: none with two
// stages, the configuration v08's sweep chose, so each tile's load starts only when the
// previous tile is done. Here thread 0 refills at the top of each step: it waits
// (wait_group.read 0) for the store of tile k-1, issued just before, to finish reading its stage
// (shared memory, not DRAM), then issues the load of tile k-1+STAGES, which is in flight while
// the block waits for and computes tile k: STAGES-1 loads ahead instead of STAGES-2.
// Everything else is v07's: the tiles, the group per thread with the look-back shuffle, the
// remaining groups by the last block, and the sum finished in the same launch. The kernel is v07's
// (transform_bulk.cuh) under its own name, with the two refill hooks set here: the refill before
// the wait, none after the store.

#ifndef STAGES
#define STAGES 2
#endif
#define BULK_KERNEL transform_early_refill

// thread 0, at the top of step k: once tile k-1's store has read its stage, that stage takes
// tile k-1+STAGES (before tile k's wait, so one stage does not wait for itself: no STAGES >= 2)
#define BULK_REFILL_BEFORE_WAIT                                        \
    if (threadIdx.x == 0 && k >= 1 && k - 1 + STAGES < mine) {         \
        bulk_wait_read<0>(); /* tile k-1's store has read its stage */ \
        fill(k - 1 + STAGES);                                          \
    }
#define BULK_REFILL_AFTER_STORE  // nothing: the refill came first

#include "transform_bulk.cuh"
