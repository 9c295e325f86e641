#version 450
// The huff decoder for devices with the shaderInt64 feature (the lane window's shift is one funnel shift): see
// huff_decode.glsl.
#define HUFF_INT64 1
#define HUFF_INT16 1
#include "huff_decode.glsl"
