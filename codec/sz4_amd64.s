//go:build amd64 && !purego

#include "textflag.h"

// Per 128-bit lane: the low bytes of 8 little-endian 16-bit values, then their high bytes.
DATA splitBytes<>+0(SB)/8, $0x0e0c0a0806040200
DATA splitBytes<>+8(SB)/8, $0x0f0d0b0907050301
DATA splitBytes<>+16(SB)/8, $0x0e0c0a0806040200
DATA splitBytes<>+24(SB)/8, $0x0f0d0b0907050301
GLOBL splitBytes<>(SB), RODATA|NOPTR, $32

DATA bytes7F<>+0(SB)/8, $0x7f7f7f7f7f7f7f7f
DATA bytes7F<>+8(SB)/8, $0x7f7f7f7f7f7f7f7f
DATA bytes7F<>+16(SB)/8, $0x7f7f7f7f7f7f7f7f
DATA bytes7F<>+24(SB)/8, $0x7f7f7f7f7f7f7f7f
GLOBL bytes7F<>(SB), RODATA|NOPTR, $32

DATA bytes80<>+0(SB)/8, $0x8080808080808080
DATA bytes80<>+8(SB)/8, $0x8080808080808080
DATA bytes80<>+16(SB)/8, $0x8080808080808080
DATA bytes80<>+24(SB)/8, $0x8080808080808080
GLOBL bytes80<>(SB), RODATA|NOPTR, $32

DATA bytes01<>+0(SB)/8, $0x0101010101010101
DATA bytes01<>+8(SB)/8, $0x0101010101010101
DATA bytes01<>+16(SB)/8, $0x0101010101010101
DATA bytes01<>+24(SB)/8, $0x0101010101010101
GLOBL bytes01<>(SB), RODATA|NOPTR, $32

DATA bytes0F<>+0(SB)/8, $0x0f0f0f0f0f0f0f0f
DATA bytes0F<>+8(SB)/8, $0x0f0f0f0f0f0f0f0f
DATA bytes0F<>+16(SB)/8, $0x0f0f0f0f0f0f0f0f
DATA bytes0F<>+24(SB)/8, $0x0f0f0f0f0f0f0f0f
GLOBL bytes0F<>(SB), RODATA|NOPTR, $32

// Weights 1, 16 for pairing two 4-bit codes into one byte with VPMADDUBSW.
DATA nibWeights<>+0(SB)/8, $0x1001100110011001
DATA nibWeights<>+8(SB)/8, $0x1001100110011001
DATA nibWeights<>+16(SB)/8, $0x1001100110011001
DATA nibWeights<>+24(SB)/8, $0x1001100110011001
GLOBL nibWeights<>(SB), RODATA|NOPTR, $32

// LOOKUP4 turns exponents (high nibbles in Y8, low nibbles in Y9) into code+1 in Y6, 0 where no group of the
// avx2EncTables at R10 matches; Y6 must be zero on entry. Clobbers Y0, Y1.
#define LOOKUP1(hi, tab) \
	VMOVDQU hi(R10), Y0; \
	VPCMPEQB Y0, Y8, Y0; \
	VMOVDQU tab(R10), Y1; \
	VPSHUFB Y9, Y1, Y1; \
	VPAND Y0, Y1, Y1; \
	VPOR Y1, Y6, Y6

#define LOOKUP4 \
	LOOKUP1(0, 128); \
	LOOKUP1(32, 160); \
	LOOKUP1(64, 192); \
	LOOKUP1(96, 224)

// func encodeAVX2(src *byte, blocks int, codes *byte, lows *byte, esc *uint32, t *avx2EncTables)
TEXT ·encodeAVX2(SB), NOSPLIT, $0-48
	MOVQ src+0(FP), SI
	MOVQ blocks+8(FP), CX
	MOVQ codes+16(FP), DI
	MOVQ lows+24(FP), R8
	MOVQ esc+32(FP), R9
	MOVQ t+40(FP), R10
	TESTQ CX, CX
	JZ encDone
	VMOVDQU splitBytes<>(SB), Y15
	VMOVDQU bytes7F<>(SB), Y14
	VMOVDQU bytes80<>(SB), Y13
	VMOVDQU bytes01<>(SB), Y12
	VMOVDQU bytes0F<>(SB), Y11
	VPXOR Y10, Y10, Y10

encLoop:
	VMOVDQU (SI), Y0
	VMOVDQU 32(SI), Y1
	VPSHUFB Y15, Y0, Y2
	VPSHUFB Y15, Y1, Y3
	VPERMQ $0xD8, Y2, Y2
	VPERMQ $0xD8, Y3, Y3
	VPERM2I128 $0x20, Y3, Y2, Y4 // L: low bytes of values 0..31
	VPERM2I128 $0x31, Y3, Y2, Y5 // H: high bytes

	// Kept byte: sign from H, mantissa from L.
	VPAND Y13, Y5, Y6
	VPAND Y14, Y4, Y7
	VPOR Y6, Y7, Y6
	VMOVDQU Y6, (R8)

	// Exponent: (H & 0x7F) << 1 | L >> 7.
	VPAND Y14, Y5, Y7
	VPADDB Y7, Y7, Y7
	VPSRLW $7, Y4, Y8
	VPAND Y12, Y8, Y8
	VPOR Y8, Y7, Y7

	// Code+1 by high-nibble group and low-nibble table; 0 when no group matches.
	VPSRLW $4, Y7, Y8
	VPAND Y11, Y8, Y8
	VPAND Y11, Y7, Y9
	VPXOR Y6, Y6, Y6
	LOOKUP4

	// Escape mask: values whose code+1 is 0.
	VPCMPEQB Y10, Y6, Y0
	VPMOVMSKB Y0, AX
	MOVL AX, (R9)

	// Codes (escapes become 0), paired into nibbles.
	VPSUBUSB Y12, Y6, Y6
	VMOVDQU nibWeights<>(SB), Y1
	VPMADDUBSW Y1, Y6, Y6
	VPACKUSWB Y6, Y6, Y6
	VPERMQ $0x08, Y6, Y6
	VMOVDQU X6, (DI)

	ADDQ $64, SI
	ADDQ $16, DI
	ADDQ $32, R8
	ADDQ $4, R9
	DECQ CX
	JNZ encLoop
	VZEROUPPER

encDone:
	RET

// func decodeAVX2(codes *byte, lows *byte, blocks int, dst *byte, cb *[32]byte, stream bool)
// With stream set and dst 32-byte aligned the output goes out with non-temporal stores: for outputs larger than the
// caches, skipping the read-for-ownership of every output line saves a third of the memory traffic.
TEXT ·decodeAVX2(SB), NOSPLIT, $0-41
	MOVQ codes+0(FP), SI
	MOVQ lows+8(FP), R8
	MOVQ blocks+16(FP), CX
	MOVQ dst+24(FP), DI
	MOVQ cb+32(FP), R10
	MOVBQZX stream+40(FP), R11
	TESTQ CX, CX
	JZ decDone
	VMOVDQU (R10), Y15
	VMOVDQU bytes7F<>(SB), Y14
	VMOVDQU bytes80<>(SB), Y13
	VMOVDQU bytes0F<>(SB), Y11

decLoop:
	// 32 codes from 16 bytes: even values in the low nibbles, odd in the high.
	VMOVDQU (SI), X0
	VPSRLW $4, X0, X1
	VPAND X11, X1, X1
	VPAND X11, X0, X2
	VPUNPCKLBW X1, X2, X3
	VPUNPCKHBW X1, X2, X4
	VINSERTI128 $1, X4, Y3, Y3
	VPSHUFB Y3, Y15, Y5 // exponents

	VMOVDQU (R8), Y6 // kept bytes
	// High byte: sign | exponent >> 1.
	VPSRLW $1, Y5, Y7
	VPAND Y14, Y7, Y7
	VPAND Y13, Y6, Y8
	VPOR Y8, Y7, Y7
	// Low byte: exponent's bit 0 << 7 | mantissa.
	VPSLLW $7, Y5, Y9
	VPAND Y13, Y9, Y9
	VPAND Y14, Y6, Y8
	VPOR Y8, Y9, Y9

	VPUNPCKLBW Y7, Y9, Y0
	VPUNPCKHBW Y7, Y9, Y1
	VPERM2I128 $0x20, Y1, Y0, Y2
	VPERM2I128 $0x31, Y1, Y0, Y4
	TESTQ R11, R11
	JZ decUnaligned
	TESTQ $31, DI
	JNZ decUnaligned
	VMOVNTDQ Y2, (DI)
	VMOVNTDQ Y4, 32(DI)
	JMP decNext

decUnaligned:
	VMOVDQU Y2, (DI)
	VMOVDQU Y4, 32(DI)

decNext:
	ADDQ $16, SI
	ADDQ $32, R8
	ADDQ $64, DI
	DECQ CX
	JNZ decLoop
	SFENCE
	VZEROUPPER

decDone:
	RET

// func countEscAVX2(src *byte, blocks int, t *avx2EncTables) int
// The escape count of blocks×32 values: what encodeAVX2's masks would hold, without writing anything.
TEXT ·countEscAVX2(SB), NOSPLIT, $0-32
	MOVQ src+0(FP), SI
	MOVQ blocks+8(FP), CX
	MOVQ t+16(FP), R10
	XORQ DX, DX
	TESTQ CX, CX
	JZ cntDone
	VMOVDQU bytes7F<>(SB), Y14
	VMOVDQU bytes01<>(SB), Y12
	VMOVDQU bytes0F<>(SB), Y11
	VPXOR Y10, Y10, Y10

cntLoop:
	// Exponents as 16-bit words: ((v << 1) & 0xFFFF) >> 8 drops the sign exactly; the packed order does not
	// matter for a count.
	VMOVDQU (SI), Y2
	VMOVDQU 32(SI), Y3
	VPSLLW $1, Y2, Y2
	VPSLLW $1, Y3, Y3
	VPSRLW $8, Y2, Y2
	VPSRLW $8, Y3, Y3
	VPACKUSWB Y3, Y2, Y7 // ((v << 1) & 0xFFFF) >> 8 = exponent, exact
	VPSRLW $4, Y7, Y8
	VPAND Y11, Y8, Y8
	VPAND Y11, Y7, Y9
	VPXOR Y6, Y6, Y6
	LOOKUP4
	VPCMPEQB Y10, Y6, Y0
	VPMOVMSKB Y0, AX
	POPCNTL AX, AX
	ADDQ AX, DX
	ADDQ $64, SI
	DECQ CX
	JNZ cntLoop
	VZEROUPPER

cntDone:
	MOVQ DX, ret+24(FP)
	RET
