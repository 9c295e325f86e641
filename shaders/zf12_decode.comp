#version 450
#define PIECES 0
#include "zf12_decode.glsl"
