#version 450
#define PIECES 0
#include "sz4_decode.glsl"
