// v10: v08's kernel (v07's, transform_bulk.cuh) with the bf16 results rounded and packed by the
// hardware: one cvt.rn.bf16x2.f32 per pair of values (TRANSFORM_HW_CVT in transform.cuh) in place
// of from_f's integer round-to-nearest-even (additions, shifts and masks for each value). The same
// bits for every finite value; fp32 builds are v08's exactly.

#define TRANSFORM_HW_CVT 1
#include "transform_bulk.cuh"
