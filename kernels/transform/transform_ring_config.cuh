// What the versions from v12 on build transform_ring.cuh's rings with: v07's SFU intrinsics
// (TRANSFORM_FAST_MATH), v10's bf16 rounding by cvt.rn.bf16x2.f32 (TRANSFORM_HW_CVT), the sm90
// bulk-copy and mbarrier helpers, and the tiles (transform_tiles.cuh) in a ring of STAGES, 2
// unless defined (v08's sweep's choice, which v09 on keep). A version defines its kernel: the
// ring's cut, the shared memory it passes the ring, and how the sum is finished.
//
// Changed in place only with the PTX of every build of every version that includes it unchanged
// (tools/same_ptx.py; `report same-code` proves it for the recorded runs).
#pragma once

#define TRANSFORM_FAST_MATH 1
#define TRANSFORM_HW_CVT 1
#include "transform.cuh"
#include "common/sm90/bulk.cuh"
#include "common/sm90/mbarrier.cuh"
#include "transform_ring.cuh"

#ifndef STAGES
#define STAGES 2
#endif
#include "transform_tiles.cuh"
