#version 450
#define PIECES 0
#include "xw_decode.glsl"
