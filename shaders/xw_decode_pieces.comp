#version 450
// The exponent-window decoder over the pieces of an auto body (docs/FORMAT.md §11): see xw_decode.glsl.
#define PIECES 1
#define KERNEL_XW_DECODE_PIECES
#include "xw_decode.glsl"
