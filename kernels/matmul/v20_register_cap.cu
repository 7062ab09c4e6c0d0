// v20: v18's stream-K schedule and v17's loop (matmul_stream_k.cuh) with the registers capped at
// MAXNREG (__maxnreg__): v17's loop alone compiles to 210 registers; inside v18's tile and segment
// loops ptxas takes all 255 and the same loop issues on fewer cycles, even on v17's own schedule
// (v19's sweep, WHOLE_ONLY). Capped near v17's count, ptxas should lay the loop out as it does in v17.

#include "matmul.cuh"

#ifndef BM  // the sweep's tiles: v17's 256 x 128 with 16 x 8 a lane (matmul_stream_k.cuh's default is v18's)
#define BM 256
#define BN 128
#define WM 128
#define WN 32
#endif
#ifndef MAXNREG
#define MAXNREG 210
#endif

#include "matmul_stream_k.cuh"

STREAM_K_KERNEL(matmul_register_cap)
