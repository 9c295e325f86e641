#version 450
#define PIECES 0
#define KERNEL_ZF12_DECODE
#include "zf12_decode.glsl"
