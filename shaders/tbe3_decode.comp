#version 450
#define PIECES 0
#include "tbe3_decode.glsl"
