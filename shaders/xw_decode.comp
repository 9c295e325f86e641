#version 450
#define PIECES 0
#define KERNEL_XW_DECODE
#include "xw_decode.glsl"
