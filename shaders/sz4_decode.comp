#version 450
#define PIECES 0
#define KERNEL_SZ4_DECODE
#include "sz4_decode.glsl"
