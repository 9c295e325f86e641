#version 450
// The huff decoder for devices with the shaderInt64 and shaderInt16 features (the lane window's shift is one funnel
// shift, the decode tables are 16-bit entries): see huff_decode.glsl.
#define HUFF_INT64 1
#define HUFF_INT16 1
#define KERNEL_HUFF_DECODE_I64
#include "huff_decode.glsl"
