package codec

import (
	"context"
	"encoding/binary"
	"flag"
	"os"
	"runtime"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vkzip/vkzip/codec/cdeflate"
	"github.com/vkzip/vkzip/codec/crc32c"
	"github.com/vkzip/vkzip/codec/layout"
)

var writeBigMeta = flag.String("write-bigmeta", "", "write the largest-metadata payloads of TestBigMetadata to this prefix (-max.vkz, -over.vkz)")

// bigMetaPayload builds a version 2 container whose directory is as large as a reader accepts (2^27 bytes) and holds
// records records: empty stored U8 tensors (the smallest tensor record, each with its 4-byte body and seal), then
// blobs of zeros that pad the directory to its limit (or, with records beyond what fits, empty blobs only).
func bigMetaPayload(records int, tensors bool) []byte {
	const tensorRec = 1 + 2 + 4 + 4 + 1 + 8 + 8 + 8 // type, nameLen, dtype..reserved, codebook, rank, dim, elements, bodyLength
	le := binary.LittleEndian
	dir := make([]byte, 0, layout.MaxMetaRaw)
	dir = le.AppendUint64(dir, 0) // sequence
	dir = le.AppendUint32(dir, 0) // codebooks
	dir = le.AppendUint32(dir, 0) // records, set below
	nt, nblob := 0, 0
	if tensors {
		nt = records - 2
		for i := 0; i < nt; i++ {
			dir = append(dir, layout.RecordTensor, 0, 0, byte(layout.DTypeU8), layout.FormatStored, 0, 0)
			dir = le.AppendUint32(dir, layout.NoCodebook)
			dir = append(dir, 1)
			dir = le.AppendUint64(dir, 0)
			dir = le.AppendUint64(dir, 0)
			dir = le.AppendUint64(dir, 4)
		}
		// Two blobs fill the directory to its limit (each within the 2^26-byte inline limit).
		rest := layout.MaxMetaRaw - len(dir) - 2*5
		for _, n := range []int{rest / 2, rest - rest/2} {
			dir = append(dir, layout.RecordBlob)
			dir = le.AppendUint32(dir, uint32(n))
			dir = append(dir, make([]byte, n)...)
		}
		nblob = 2
		_ = tensorRec
	} else {
		for len(dir)+5 <= layout.MaxMetaRaw {
			dir = append(dir, layout.RecordBlob, 0, 0, 0, 0)
			nblob++
		}
		dir = dir[:len(dir)-5]
		nblob--
		dir = append(dir, layout.RecordBlob)
		dir = le.AppendUint32(dir, uint32(layout.MaxMetaRaw-len(dir)-4))
		dir = append(dir, make([]byte, layout.MaxMetaRaw-len(dir))...)
		nblob++
	}
	le.PutUint32(dir[12:], uint32(nt+nblob))
	p := append([]byte(nil), layout.Magic[:]...)
	p = le.AppendUint16(p, layout.Version2)
	p = le.AppendUint16(p, layout.FlagChecksums|layout.FlagFinal)
	p = append(p, make([]byte, 8)...)
	p = cdeflate.Compress(p, dir)
	le.PutUint32(p[12:], uint32(len(p)-layout.PreambleSize))
	le.PutUint32(p[16:], uint32(len(dir)))
	for len(p)%4 != 0 {
		p = append(p, 0)
	}
	metaCRC := crc32c.Checksum(p)
	p = le.AppendUint32(p, metaCRC)
	for i := 0; i < nt; i++ {
		p = le.AppendUint32(p, 0) // CRC-32C of no bytes
		p = le.AppendUint32(p, sealOf(metaCRC, uint32(i), []uint32{0}))
	}
	return p
}

// allocDuring is the bytes allocated while fn runs: an upper bound of the heap it needs at its peak.
func allocDuring(fn func()) uint64 {
	runtime.GC()
	var a, b runtime.MemStats
	runtime.ReadMemStats(&a)
	fn()
	runtime.ReadMemStats(&b)
	return b.TotalAlloc - a.TotalAlloc
}

// TestBigMetadata: the largest directory a reader accepts, full of the smallest records, decodes and inspects within
// a fixed memory bound; one with more records than a container may hold is refused as too large before any record
// is built.
func TestBigMetadata(t *testing.T) {
	if testing.Short() {
		t.Skip("builds two 128 MiB directories")
	}
	const bound = 512 << 20
	max := bigMetaPayload(layout.MaxRecords, true)
	over := bigMetaPayload(0, false)
	if *writeBigMeta != "" {
		require.NoError(t, os.WriteFile(*writeBigMeta+"-max.vkz", max, 0o644))
		require.NoError(t, os.WriteFile(*writeBigMeta+"-over.vkz", over, 0o644))
	}
	t.Logf("payloads: %d bytes (%d records), %d bytes (%d-byte directory of empty blobs)", len(max), layout.MaxRecords, len(over), layout.MaxMetaRaw)
	c := newCPU(t)
	var out []byte
	var err error
	n := allocDuring(func() { out, err = c.DecodeAll(max, nil) })
	require.NoError(t, err)
	require.Len(t, out, layout.MaxMetaRaw-8-4-4-(layout.MaxRecords-2)*36-2*5)
	t.Logf("decode of the largest directory: %d MiB allocated", n>>20)
	require.Less(t, n, uint64(bound))
	out = nil
	var streamed int
	n = allocDuring(func() {
		err = c.DecodeStream(context.Background(), max, func(_ *ParsedRecord, d []byte) error { streamed += len(d); return nil })
	})
	require.NoError(t, err)
	require.Equal(t, layout.MaxMetaRaw-8-4-4-(layout.MaxRecords-2)*36-2*5, streamed)
	t.Logf("streamed decode of the largest directory: %d MiB allocated", n>>20)
	require.Less(t, n, uint64(bound))
	var info *Info
	n = allocDuring(func() { info, err = Inspect(max) })
	require.NoError(t, err)
	require.Len(t, info.Containers[0].Records, layout.MaxRecords)
	t.Logf("inspect of the largest directory: %d MiB allocated", n>>20)
	require.Less(t, n, uint64(bound))
	info = nil

	n = allocDuring(func() { _, err = c.DecodeAll(over, nil) })
	require.ErrorIs(t, err, ErrTooLarge)
	t.Logf("refusal of %d records: %d MiB allocated", layout.MaxMetaRaw/5, n>>20)
	require.Less(t, n, uint64(bound))
	_, err = Inspect(over)
	require.ErrorIs(t, err, ErrTooLarge)
}
