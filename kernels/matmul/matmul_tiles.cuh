// The settings of the shared-memory tiled versions (v04 on), the lecture's names: a CTA computes
// an L x L tile of C, each of its (L/V) x (L/V) threads a V x V block of it, from S-deep slices of
// A and B staged in shared memory. V must divide L, and from v05 on be a multiple of 4; S a
// multiple of 4 from v05 on. A version may set them before including this header.
#pragma once

#ifndef L
#define L 128
#endif
#ifndef V
#define V 8
#endif
#ifndef S
#define S 8
#endif
#define TPD (L / V)            // threads along each side of the CTA
#define THREADS (TPD * TPD)
