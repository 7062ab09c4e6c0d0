// The tiles of the bulk-copy rings (v07 on): their size, the threads of a block and the bound on
// static shared memory. transform_bulk.cuh (v07's kernel) and transform_ring_config.cuh (v12 on)
// include it, each with its default ring depth STAGES set first (v07's 4; v08's sweep's 2 from
// v12 on). Needs transform.cuh (elem_t) first.
//
//   TILE_BYTES   bytes per tile, 8 KB unless defined (v07's guess; v08's sweep kept it)
//   THREADS      threads per block, 256
//   TILE         elements per tile; TILE_GROUPS: groups of four per tile
//
// Changed in place only with the PTX of every build of every version that includes it unchanged
// (tools/same_ptx.py; `report same-code` proves it for the recorded runs).
#pragma once

#ifndef TILE_BYTES
#define TILE_BYTES 8192
#endif
#define THREADS 256

#define TILE (TILE_BYTES / (u32)sizeof(elem_t))  // elements per tile
#define TILE_GROUPS (TILE / 4)
static_assert(STAGES * TILE_BYTES <= 47 * 1024, "the ring and the barriers are static shared memory (48 KB)");
