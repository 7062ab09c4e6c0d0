// v05: v04 with the streaming cache hint on the group loads and stores (ld.global.cs,
// st.global.cs: evict first). Every byte of x and y is touched once; the hint asks the L2 not
// to keep them in preference to anything else. Everything else is v04's kernel (transform_unrolled.cuh).

#define TRANSFORM_STREAMING 1
#include "transform_unrolled.cuh"
