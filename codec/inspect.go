package codec

import (
	"encoding/binary"

	"github.com/vkzip/vkzip/codec/layout"
)

// Info describes a payload without decoding it: its containers, their codebooks and records, and per tensor the
// chunk mix and escape count read from the chunk tables.
type Info struct {
	Bytes      uint64          `json:"bytes"`
	RawBytes   uint64          `json:"raw_bytes"`
	Ratio      float64         `json:"ratio"`
	Containers []ContainerInfo `json:"containers"`
}

// ContainerInfo is one container (frame) of a payload.
type ContainerInfo struct {
	Offset    uint64       `json:"offset"`
	Bytes     uint64       `json:"bytes"`
	MetaBytes uint64       `json:"meta_bytes"`
	Version   uint16       `json:"version"`
	Sequence  uint64       `json:"sequence"` // index in its stream (version 2; 0 in version 1)
	Sealed    bool         `json:"sealed"`   // version 2: every tensor body is followed by a seal
	Checksums bool         `json:"checksums"`
	Final     bool         `json:"final"`
	Codebooks [][16]uint8  `json:"codebooks"`
	Records   []RecordInfo `json:"records"`
}

// RecordInfo is one record; the chunk fields are set for coded tensors.
type RecordInfo struct {
	Kind       string   `json:"kind"` // "blob" or "tensor"
	Name       string   `json:"name,omitempty"`
	DType      string   `json:"dtype,omitempty"`
	Shape      []uint64 `json:"shape,omitempty"`
	Format     string   `json:"format,omitempty"`
	ChunkSize  uint64   `json:"chunk_size,omitempty"`
	Codebook   *uint32  `json:"codebook,omitempty"`
	RawBytes   uint64   `json:"raw_bytes"`
	Bytes      uint64   `json:"bytes"`
	Chunks     uint64   `json:"chunks,omitempty"`
	RawChunks  uint64   `json:"raw_chunks,omitempty"`
	Escapes    uint64   `json:"escapes,omitempty"`
	EscapeRate float64  `json:"escape_rate,omitempty"`
	RawBlocks  uint64   `json:"raw_blocks,omitempty"` // zf12 blocks left raw
	// Seal is a version 2 tensor's stored seal; SealOK tells whether it is the seal of the body's checksum words
	// (with checksums on; the words themselves are only verified by decoding).
	Seal   *uint32 `json:"seal,omitempty"`
	SealOK *bool   `json:"seal_ok,omitempty"`
	// Mix counts the chunks by the format and kind they are coded in, in order of first appearance.
	Mix       []MixCount  `json:"chunk_mix,omitempty"`
	ChunkList []ChunkInfo `json:"-"` // every chunk's entry (the CLI prints it on request)
}

// MixCount is how many chunks of a tensor are coded one way.
type MixCount struct {
	Format string `json:"format"`
	Kind   string `json:"kind"`
	Chunks uint64 `json:"chunks"`
}

// Inspect parses every container of src and summarises it. It verifies the metadata checksums, the stream's
// sequence and chunk-table structure but not the bodies' contents; decode for that. Version 2 seals are reported
// with whether they match the bodies' checksum words.
func Inspect(src []byte) (*Info, error) {
	info := &Info{Bytes: uint64(len(src))}
	var off uint64
	var first uint16
	for k := uint64(0); ; k++ {
		ct, err := ParseHeader(src[off:])
		if err != nil {
			return nil, err
		}
		if k == 0 {
			first = ct.Version
		}
		if err := ct.CheckStreamPosition(k, first); err != nil {
			return nil, err
		}
		ci := ContainerInfo{Offset: off, Bytes: ct.Size, MetaBytes: ct.MetaLen, Checksums: ct.Checksums(),
			Final: ct.Flags&layout.FlagFinal != 0, Version: ct.Version, Sequence: ct.Sequence, Sealed: ct.Sealed()}
		for _, cb := range ct.Codebooks {
			ci.Codebooks = append(ci.Codebooks, cb)
		}
		ci.Records = make([]RecordInfo, 0, len(ct.Recs))
		var seals []uint32 // the records' Seal and SealOK point into these: two allocations a container
		var sealOK []bool
		var words []uint32
		if ct.Sealed() {
			seals, sealOK = make([]uint32, len(ct.Recs)), make([]bool, len(ct.Recs))
		}
		for i := range ct.Recs {
			r := &ct.Recs[i]
			ri := RecordInfo{RawBytes: r.RawSize()}
			info.RawBytes += r.RawSize()
			if r.Blob {
				ri.Kind = "blob"
				ci.Records = append(ci.Records, ri)
				continue
			}
			ri.Kind, ri.Name, ri.DType, ri.Shape, ri.Format = "tensor", r.Name, r.DType.String(), r.Shape, FormatName(r.Format)
			ri.Bytes = r.BodyLen
			if f, _ := LookupFormat(r.Format); f != nil && f.Chunks != nil {
				if f.Codebook {
					cb := r.Codebook
					ri.Codebook = &cb
				}
				body := src[off+r.BodyOff : off+r.BodyOff+r.BodyLen]
				chunks, err := f.Chunks(body, r.DType, r.Elements, uint(r.Shift))
				if err != nil {
					return nil, withTensor(err, r.Name)
				}
				ri.ChunkSize, ri.Chunks, ri.ChunkList = 1<<r.Shift, uint64(len(chunks)), chunks
				for _, ch := range chunks {
					ri.addChunk(ch)
				}
				if r.Elements > 0 && ri.Escapes > 0 {
					ri.EscapeRate = float64(ri.Escapes) / float64(r.Elements)
				}
			}
			if ct.Sealed() {
				var want uint32
				var err error
				if want, words, err = ct.sealOf(src[off:], i, words); err != nil {
					return nil, err
				}
				seals[i] = binary.LittleEndian.Uint32(src[off+r.SealOff():])
				sealOK[i] = want == seals[i]
				ri.Seal, ri.SealOK = &seals[i], &sealOK[i]
			}
			ci.Records = append(ci.Records, ri)
		}
		info.Containers = append(info.Containers, ci)
		off += ct.Size
		if ci.Final {
			if off != uint64(len(src)) {
				return nil, errorf(ErrCorrupt, "%d bytes after the final container", uint64(len(src))-off)
			}
			break
		}
		if off == uint64(len(src)) {
			return nil, errorf(ErrTruncated, "stream ends without a final container")
		}
	}
	if info.Bytes > 0 {
		info.Ratio = float64(info.RawBytes) / float64(info.Bytes)
	}
	return info, nil
}

func (ri *RecordInfo) addChunk(ch ChunkInfo) {
	if ch.Kind == "raw" {
		ri.RawChunks++
	}
	ri.Escapes += ch.Escapes
	ri.RawBlocks += ch.RawBlocks
	for i := range ri.Mix {
		if ri.Mix[i].Format == ch.Format && ri.Mix[i].Kind == ch.Kind {
			ri.Mix[i].Chunks++
			return
		}
	}
	ri.Mix = append(ri.Mix, MixCount{Format: ch.Format, Kind: ch.Kind, Chunks: 1})
}
