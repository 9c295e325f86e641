#version 450
// The SplitZip-4 decoder over the pieces of an auto body (docs/FORMAT.md §11): see sz4_decode.glsl.
#define PIECES 1
#define KERNEL_SZ4_DECODE_PIECES
#include "sz4_decode.glsl"
