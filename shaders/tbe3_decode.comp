#version 450
#define PIECES 0
#define KERNEL_TBE3_DECODE
#include "tbe3_decode.glsl"
