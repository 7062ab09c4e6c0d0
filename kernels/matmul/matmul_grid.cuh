// The settings of v02's and v03's grid: blocks of BLOCK x BLOCK threads, each thread owning a
// V x V block of C straight from global memory (no shared memory). A version may set them
// before including this header (v02 adds KC).
#pragma once

#ifndef BLOCK
#define BLOCK 16
#endif
#ifndef V
#define V 4
#endif
