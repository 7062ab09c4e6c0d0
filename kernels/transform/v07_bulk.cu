// v07: v06 with x and y moved by the SM's bulk-copy unit through a ring of shared-memory tiles
// (cp.async.bulk), the threads only computing.
//
// The array is cut into tiles of TILE_BYTES. Block b takes tiles b, b + gridDim.x, ... Thread 0
// keeps up to STAGES tiles loading: it arms the stage's mbarrier with the tile's byte count and
// issues one bulk load of the whole tile. Every thread waits on the stage, transforms its groups
// in place in shared memory (v02's group per thread and look-back shuffle; a tile is a whole
// number of 32-blocks, so a group's place in its 32-block is its place in the tile), fences its
// writes for the async proxy, and after the block's barrier thread 0 issues one bulk store of
// the tile. The stage of the previous tile is refilled once its store has finished reading it
// (wait_group.read 1), so while the threads compute tile k the loads of tiles k+1 .. k+STAGES-2
// are in flight per block (none with two stages: then the other blocks of the SM cover the wait). The whole groups after the last whole tile go to the last block (block_loop), the
// partial 32-block and the sum to finish_grid as in v06: one launch per call.
//
// The kernel is in transform_bulk.cuh, with hooks for its name, its pass over a tile and its
// refill that v09 and v11 set; this file builds it with v07's own.

#include "transform_bulk.cuh"
