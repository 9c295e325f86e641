package transfer

import (
	"encoding/binary"
	"fmt"

	"github.com/vkzip/vkzip/codec"
)

// Wire protocol, version 1. Every message is one Transport message whose first byte is its kind; integers are
// little-endian. The sender speaks first:
//
//	sender → receiver  Hello    kind=1 magic "VKZT" version:u16 mode:u8 flags:u8 chunk:u32 codecChunk:u32
//	                            codebook[16]                                                   (33 bytes)
//	receiver → sender  HelloAck kind=2 status:u8 version:u16 message...        (status 0: go ahead)
//	sender → receiver  Data     kind=3 reserved[3] rawLen:u32 seq:u64 payloadLen:u32 reserved:u32 payload
//	                            (24-byte header; seq counts from 0 without gaps; 0 < rawLen <= chunk)
//	sender → receiver  End      kind=4 reserved[7] chunks:u64 total:u64 sha256[32]                  (56 bytes)
//	receiver → sender  Result   kind=5 status:u8 reserved[6] total:u64 sha256[32] message...
//	either way         Abort    kind=6 status:u8 message...                (a failure; the sender stops)
//
// Hello flags: bit 0 a fixed codebook follows (otherwise every chunk is calibrated on itself and codebook is
// zero), bit 1 chunk checksums, bit 2 chunk hashing (below). Reserved bytes are zero. In mode raw (0) a data payload is the chunk's bytes; in
// mode vkzip (1) it is one final codec container (docs/FORMAT.md) holding the chunk as a BF16 tensor, plus a
// one-byte blob when the chunk's length is odd (only the stream's last chunk can be). End carries the hash and
// length of the whole raw stream; the receiver compares them with what it decoded and wrote, and answers with
// Result: status 0 when they match, statusHash (3) with its own hash and length when they do not.
//
// The hash is the SHA-256 of the raw stream (what sha256sum prints), computed in order on one core at each end:
// about 1-2 GB/s, a limit above some 10 Gbit/s. With chunk hashing it is instead the SHA-256 of the concatenated
// SHA-256 digests of the chunks (each chunk's raw bytes as framed), which the workers compute in parallel. Hello
// flag xxh3 replaces SHA-256 by XXH3-128 in both (16 bytes, then 16 zero bytes in the 32-byte digest fields).

// Version is the protocol version this package speaks.
const Version = 1

const magic = "VKZT"

// Message kinds.
const (
	kindHello    = 1
	kindHelloAck = 2
	kindData     = 3
	kindEnd      = 4
	kindResult   = 5
	kindAbort    = 6
)

// Message sizes.
const (
	helloSize      = 33
	dataHeaderSize = 24
	endSize        = 56
	resultSize     = 48
	// controlBuf bounds every message other than Data (Abort and Result carry a message text).
	controlBuf = 4 << 10
)

// Hello flags.
const (
	flagCodebook  = 1 << 0
	flagChecksums = 1 << 1
	flagChunkHash = 1 << 2
	flagXXH3      = 1 << 3 // the digest is XXH3-128 instead of SHA-256
)

// Mode says how data frames carry the stream.
type Mode uint8

const (
	Raw        Mode = 0 // the bytes as they are
	Compressed Mode = 1 // each chunk one vkzip container
)

func (m Mode) String() string {
	switch m {
	case Raw:
		return "raw"
	case Compressed:
		return "vkzip"
	}
	return fmt.Sprintf("mode%d", uint8(m))
}

// hello is the sender's opening message.
type hello struct {
	version    uint16
	mode       Mode
	checksums  bool
	chunkHash  bool
	hash       Hash
	chunk      uint32 // raw bytes per data frame
	codecChunk uint32 // SplitZip-4 chunk in values (compressed mode)
	codebook   *codec.Codebook
}

var le = binary.LittleEndian

func appendHello(b []byte, h *hello) []byte {
	b = append(b, kindHello)
	b = append(b, magic...)
	b = le.AppendUint16(b, h.version)
	var flags uint8
	if h.codebook != nil {
		flags |= flagCodebook
	}
	if h.checksums {
		flags |= flagChecksums
	}
	if h.chunkHash {
		flags |= flagChunkHash
	}
	if h.hash == XXH3 {
		flags |= flagXXH3
	}
	b = append(b, uint8(h.mode), flags)
	b = le.AppendUint32(b, h.chunk)
	b = le.AppendUint32(b, h.codecChunk)
	var cb codec.Codebook
	if h.codebook != nil {
		cb = *h.codebook
	}
	return append(b, cb[:]...)
}

// parseHello checks magic and version first (ErrVersion for another version, whatever the rest holds), then the
// fields this version defines.
func parseHello(m []byte) (*hello, error) {
	if len(m) < 7 || m[0] != kindHello || string(m[1:5]) != magic {
		if len(m) > 0 && m[0] == kindAbort {
			st, msg := parseAbort(m)
			return nil, remoteErr("the sender", st, msg)
		}
		return nil, errorf(ErrProtocol, "the first message is not a vkzip transfer hello")
	}
	h := &hello{version: le.Uint16(m[5:])}
	if h.version != Version {
		return h, errorf(ErrVersion, "the sender speaks protocol version %d, this receiver version %d", h.version, Version)
	}
	if len(m) != helloSize {
		return nil, errorf(ErrProtocol, "hello of %d bytes, want %d", len(m), helloSize)
	}
	h.mode = Mode(m[7])
	flags := m[8]
	if h.mode != Raw && h.mode != Compressed {
		return nil, errorf(ErrProtocol, "unknown mode %d", h.mode)
	}
	if flags&^(flagCodebook|flagChecksums|flagChunkHash|flagXXH3) != 0 {
		return nil, errorf(ErrProtocol, "unknown hello flags %#x", flags)
	}
	h.checksums = flags&flagChecksums != 0
	h.chunkHash = flags&flagChunkHash != 0
	if flags&flagXXH3 != 0 {
		h.hash = XXH3
	}
	h.chunk = le.Uint32(m[9:])
	h.codecChunk = le.Uint32(m[13:])
	var cb codec.Codebook
	copy(cb[:], m[17:33])
	if flags&flagCodebook != 0 {
		if err := cb.Validate(); err != nil {
			return nil, errorf(ErrProtocol, "hello codebook: %v", err)
		}
		h.codebook = &cb
	} else if cb != (codec.Codebook{}) {
		return nil, errorf(ErrProtocol, "codebook bytes without the codebook flag")
	}
	return h, nil
}

func appendHelloAck(b []byte, status uint8, msg string) []byte {
	b = append(b, kindHelloAck, status)
	b = le.AppendUint16(b, Version)
	return append(b, clip(msg)...)
}

func appendAbort(b []byte, status uint8, msg string) []byte {
	return append(append(b, kindAbort, status), clip(msg)...)
}

func parseAbort(m []byte) (uint8, string) {
	if len(m) < 2 {
		return statusFailed, "(no reason given)"
	}
	return m[1], string(m[2:])
}

// clip bounds message texts so that every control message fits controlBuf.
func clip(s string) string {
	const max = controlBuf - resultSize
	if len(s) > max {
		return s[:max]
	}
	return s
}

// dataHeader is the fixed part of a Data message.
type dataHeader struct {
	seq        int64
	rawLen     int
	payloadLen int
}

func putDataHeader(b []byte, d dataHeader) {
	_ = b[dataHeaderSize-1]
	b[0], b[1], b[2], b[3] = kindData, 0, 0, 0
	le.PutUint32(b[4:], uint32(d.rawLen))
	le.PutUint64(b[8:], uint64(d.seq))
	le.PutUint32(b[16:], uint32(d.payloadLen))
	le.PutUint32(b[20:], 0)
}

func parseDataHeader(m []byte) (dataHeader, error) {
	if len(m) < dataHeaderSize {
		return dataHeader{}, errorf(ErrProtocol, "data message of %d bytes is shorter than its header", len(m))
	}
	d := dataHeader{rawLen: int(le.Uint32(m[4:])), seq: int64(le.Uint64(m[8:])), payloadLen: int(le.Uint32(m[16:]))}
	if d.seq < 0 {
		return d, errorf(ErrProtocol, "data sequence number %d", uint64(d.seq))
	}
	if m[1]|m[2]|m[3] != 0 || le.Uint32(m[20:]) != 0 {
		return d, seqErr(ErrProtocol, d.seq, nil, "reserved header bytes are not zero")
	}
	if d.payloadLen != len(m)-dataHeaderSize {
		return d, seqErr(ErrProtocol, d.seq, nil, "header says %d payload bytes, the message holds %d", d.payloadLen,
			len(m)-dataHeaderSize)
	}
	return d, nil
}

// end is the sender's last message.
type end struct {
	chunks int64
	total  int64
	sum    [32]byte
}

func appendEnd(b []byte, e *end) []byte {
	b = append(b, kindEnd, 0, 0, 0, 0, 0, 0, 0)
	b = le.AppendUint64(b, uint64(e.chunks))
	b = le.AppendUint64(b, uint64(e.total))
	return append(b, e.sum[:]...)
}

func parseEnd(m []byte) (*end, error) {
	if len(m) != endSize {
		return nil, errorf(ErrProtocol, "end message of %d bytes, want %d", len(m), endSize)
	}
	for _, x := range m[1:8] {
		if x != 0 {
			return nil, errorf(ErrProtocol, "reserved end bytes are not zero")
		}
	}
	e := &end{chunks: int64(le.Uint64(m[8:])), total: int64(le.Uint64(m[16:]))}
	copy(e.sum[:], m[24:])
	return e, nil
}

// result is the receiver's verdict.
type result struct {
	status uint8
	total  int64
	sum    [32]byte
	msg    string
}

func appendResult(b []byte, r *result) []byte {
	b = append(b, kindResult, r.status, 0, 0, 0, 0, 0, 0)
	b = le.AppendUint64(b, uint64(r.total))
	b = append(b, r.sum[:]...)
	return append(b, clip(r.msg)...)
}

func parseResult(m []byte) (*result, error) {
	if len(m) < resultSize {
		return nil, errorf(ErrProtocol, "result message of %d bytes, want at least %d", len(m), resultSize)
	}
	r := &result{status: m[1], total: int64(le.Uint64(m[8:])), msg: string(m[resultSize:])}
	copy(r.sum[:], m[16:48])
	return r, nil
}
