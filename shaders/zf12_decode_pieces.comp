#version 450
// The zf12 decoder over the pieces of an auto body (docs/FORMAT.md §11): see zf12_decode.glsl.
#define PIECES 1
#define KERNEL_ZF12_DECODE_PIECES
#include "zf12_decode.glsl"
