#version 450
// The huff decoder for devices without 64-bit or 16-bit integers in shaders: see huff_decode.glsl.
#define HUFF_INT64 0
#define HUFF_INT16 0
#define KERNEL_HUFF_DECODE
#include "huff_decode.glsl"
