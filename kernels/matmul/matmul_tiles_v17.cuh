// v17's tiles as defaults that a version's CONFIG overrides: a 256 x 128 tile of C per CTA, warps of
// 128 x 32 (16 x 8 outputs a lane). v17 runs them from registers, v23 from a cp.async ring.
#pragma once

#ifndef BM
#define BM 256  // rows of the CTA's tile
#endif
#ifndef BN
#define BN 128  // columns of the CTA's tile
#endif
#ifndef WM
#define WM 128
#endif
#ifndef WN
#define WN 32
#endif
