// The settings of the rectangular-tiled CUDA-core versions from v22 on, v17's recorded sweep's
// fastest unless the version or its CONFIG sets them: BM x BN tiles, warps of WM x WN (a lane
// 16 x 8 at 128 x 32), S-deep slices (matmul_prefetch.cuh's macros).
#pragma once

#ifndef BM
#define BM 256
#endif
#ifndef BN
#define BN 128
#endif
#ifndef WM
#define WM 128
#endif
#ifndef WN
#define WN 32
#endif
#ifndef S
#define S 8
#endif
