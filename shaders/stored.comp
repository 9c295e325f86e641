#version 450
// stored (docs/FORMAT.md: the values' bytes, zero padding to a word, a CRC-32C word) on the device. Encode copies
// the values into the body, zeroes the padding and writes the CRC word (0 without checksums); decode checks the CRC
// word and the padding into the status words and copies the values out. The copy runs grid-stride over words;
// the CRC, a fallback's, runs serially in the first invocation over the words the copy reads (not the ones it
// writes, so no ordering within the dispatch is needed).

#include "layout.glsl"
#define KERNEL_STORED
#include "contracts.glsl"

shared uint table[256];

// word i of the data with the padding bytes past pc.bytes zeroed
uint dataWord(uint i) {
    uint w = src[pc.srcBase + i];
    uint tail = pc.bytes & 3u;
    if (i == pc.words - 1u && tail != 0u) w &= (1u << (8u * tail)) - 1u;
    return w;
}

void main() {
    uint stride = gl_NumWorkGroups.x * WG;
    for (uint i = gl_GlobalInvocationID.x; i < pc.words; i += stride) dst[pc.dstBase + i] = dataWord(i);
    if (gl_WorkGroupID.x != 0u) return;
    for (uint v = gl_LocalInvocationID.x; v < 256u; v += WG) {
        uint c = v;
        for (uint b = 0u; b < 8u; b++) c = (c & 1u) != 0u ? (c >> 1) ^ CRC32C_POLY : c >> 1;
        table[v] = c;
    }
    barrier();
    if (gl_LocalInvocationID.x != 0u) return;
    uint crc = 0u;
    if (pc.checksums != 0u) {
        crc = 0xFFFFFFFFu;
        for (uint i = 0u; i < pc.words; i++) {
            uint w = dataWord(i);
            for (uint k = 0u; k < 4u; k++) crc = table[(crc ^ (w >> (8u * k))) & 0xFFu] ^ (crc >> 8);
        }
        crc = ~crc;
    }
    if (DECODE == 0u) {
        dst[pc.dstBase + pc.words] = crc;
        return;
    }
    uint stored = src[pc.srcBase + pc.words];
    uint flags = 0u;
    if (pc.checksums != 0u && stored != crc) flags |= STATUS_CHECKSUM;
    if (pc.checksums == 0u && stored != 0u) flags |= STATUS_NONCANONICAL;
    if (pc.words != 0u && src[pc.srcBase + pc.words - 1u] != dataWord(pc.words - 1u)) flags |= STATUS_NONCANONICAL;
    status[0] = flags;
}
