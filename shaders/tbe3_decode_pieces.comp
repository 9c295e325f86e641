#version 450
// The TBE-3 decoder over the pieces of an auto body (docs/FORMAT.md §11): see tbe3_decode.glsl.
#define PIECES 1
#define KERNEL_TBE3_DECODE_PIECES
#include "tbe3_decode.glsl"
