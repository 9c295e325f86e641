package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"

	"github.com/vkzip/vkzip/codec"
)

var inspectVerb = &verb{
	name:    "inspect",
	args:    "[flags] INPUT",
	summary: "describe a .vkz payload: containers, codebooks, records, chunks",
	about: `
Prints what INPUT (a .vkz path, or - for stdin) holds without decoding it: per container its size, flags and
codebooks; per record its kind, name, dtype, shape, format, chunk size, chunks, raw chunks, escapes, escape rate,
raw blocks (zf12), coded and decoded bytes, ratio and the chunk mix (how many chunks are coded in which format).
--chunks adds every chunk's table entry (with the window's lowest exponent for tbe3 and xw chunks). The metadata
checksums and chunk tables are verified, the tensor data is not: use 'vkzip decode' for that.`,
	examples: `  vkzip inspect kv.vkz
  vkzip inspect --json kv.vkz | jq '.containers[0].records[] | {name, escape_rate}'
  vkzip inspect --chunks kv.vkz`,
	run: runInspect,
}

// inspectOut is inspect's JSON output: codec.Info in the CLI's vocabulary (docs/JSON.md), with the input's name,
// the payload's escapes and, with --chunks, each coded record's chunk list.
type inspectOut struct {
	Input        string         `json:"input"`
	PayloadBytes uint64         `json:"payload_bytes"`
	RawBytes     uint64         `json:"raw_bytes"`
	Ratio        float64        `json:"ratio"`
	Escapes      *uint64        `json:"escapes,omitempty"` // over chunks of formats that escape (escapingFormats)
	EscapeRate   *float64       `json:"escape_rate,omitempty"`
	Containers   []containerOut `json:"containers"`
}

type containerOut struct {
	Offset       uint64      `json:"offset"`
	PayloadBytes uint64      `json:"payload_bytes"`
	MetaBytes    uint64      `json:"meta_bytes"`
	Version      uint16      `json:"version"`
	Sequence     uint64      `json:"sequence"`
	Sealed       bool        `json:"sealed"`
	Checksums    bool        `json:"checksums"`
	Final        bool        `json:"final"`
	Codebooks    [][16]uint8 `json:"codebooks,omitempty"`
	Records      []recordOut `json:"records"`
}

type recordOut struct {
	Kind          string           `json:"kind"` // "blob" or "tensor"
	Name          string           `json:"name,omitempty"`
	DType         string           `json:"dtype,omitempty"`
	Shape         []uint64         `json:"shape,omitempty"`
	Format        string           `json:"format,omitempty"`
	Chunk         uint64           `json:"chunk,omitempty"`
	CodebookIndex *uint32          `json:"codebook_index,omitempty"`
	RawBytes      uint64           `json:"raw_bytes"`
	PayloadBytes  *uint64          `json:"payload_bytes,omitempty"` // the body's; absent for a blob (inline metadata)
	Chunks        uint64           `json:"chunks,omitempty"`
	RawChunks     uint64           `json:"raw_chunks,omitempty"`
	Escapes       *uint64          `json:"escapes,omitempty"`
	EscapeRate    *float64         `json:"escape_rate,omitempty"`
	RawBlocks     uint64           `json:"raw_blocks,omitempty"`
	Seal          *uint32          `json:"seal,omitempty"`
	SealOK        *bool            `json:"seal_ok,omitempty"`
	Mix           []codec.MixCount `json:"chunk_mix,omitempty"`
	ChunkList     []chunkOut       `json:"chunk_list,omitempty"`
}

// chunkOut is one chunk table entry, with its index; escapes only for the formats that escape values.
type chunkOut struct {
	Index      uint64  `json:"index"`
	Format     string  `json:"format"`
	Kind       string  `json:"kind"`
	Values     uint64  `json:"values"`
	Escapes    *uint64 `json:"escapes,omitempty"`
	Window     *uint8  `json:"window,omitempty"`
	RawBlocks  uint64  `json:"raw_blocks,omitempty"`
	SideOffset uint32  `json:"side_offset"`
	CRC        uint32  `json:"crc"`
}

func runInspect(ctx context.Context, v *verb, args []string) error {
	fs := newFlags(v)
	asJSON := fs.Bool("json", false, "print a JSON object instead of tables")
	chunks := fs.Bool("chunks", false, "also list every chunk of every coded tensor")
	pos, err := parseArgs(v, fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return usagef("want one INPUT, got %d arguments", len(pos))
	}
	data, release, err := readInput(pos[0])
	if err != nil {
		return err
	}
	defer release()
	info, err := codec.Inspect(data)
	if err != nil {
		return err
	}
	out := inspectOut{Input: pos[0], PayloadBytes: info.Bytes, RawBytes: info.RawBytes, Ratio: info.Ratio}
	out.Escapes, out.EscapeRate = payloadEscapes(info)
	for _, c := range info.Containers {
		co := containerOut{Offset: c.Offset, PayloadBytes: c.Bytes, MetaBytes: c.MetaBytes, Version: c.Version,
			Sequence: c.Sequence, Sealed: c.Sealed, Checksums: c.Checksums, Final: c.Final, Codebooks: c.Codebooks}
		for _, r := range c.Records {
			ro := recordOut{Kind: r.Kind, Name: r.Name, DType: r.DType, Shape: r.Shape, Format: r.Format,
				Chunk: r.ChunkSize, CodebookIndex: r.Codebook, RawBytes: r.RawBytes,
				Chunks: r.Chunks, RawChunks: r.RawChunks, RawBlocks: r.RawBlocks, Seal: r.Seal, SealOK: r.SealOK,
				Mix: r.Mix}
			if r.Kind != "blob" {
				n := r.Bytes
				ro.PayloadBytes = &n
			}
			var t escapeTally
			t.add(r.ChunkList)
			ro.Escapes, ro.EscapeRate = t.count(), t.rate()
			if *chunks {
				for k, ch := range r.ChunkList {
					cho := chunkOut{Index: uint64(k), Format: ch.Format, Kind: ch.Kind, Values: ch.Values,
						Window: ch.Window, RawBlocks: ch.RawBlocks, SideOffset: ch.SideOffset, CRC: ch.CRC}
					if escapingFormats[ch.Format] {
						e := ch.Escapes
						cho.Escapes = &e
					}
					ro.ChunkList = append(ro.ChunkList, cho)
				}
			}
			co.Records = append(co.Records, ro)
		}
		out.Containers = append(out.Containers, co)
	}
	if *asJSON {
		return writeJSON(os.Stdout, out)
	}
	printInspect(os.Stdout, &out)
	return nil
}

func printInspect(w io.Writer, out *inspectOut) {
	esc := ""
	if out.EscapeRate != nil {
		esc = fmt.Sprintf(", escape rate %.4f%%", 100**out.EscapeRate)
	}
	fmt.Fprintf(w, "%s: %d bytes, %d container(s), decodes to %d bytes, ratio %.4f%s\n", shown(out.Input, "stdin"),
		out.PayloadBytes, len(out.Containers), out.RawBytes, out.Ratio, esc)
	for ci, c := range out.Containers {
		flags := []string{"checksums off"}
		if c.Checksums {
			flags[0] = "checksums on"
		}
		if c.Final {
			flags = append(flags, "final")
		}
		flags = append([]string{fmt.Sprintf("version %d", c.Version)}, flags...)
		if c.Sealed {
			flags = append(flags, fmt.Sprintf("sequence %d, sealed", c.Sequence))
		}
		fmt.Fprintf(w, "\ncontainer %d: offset %d, %d bytes (metadata %d), %s, %d record(s)\n", ci, c.Offset,
			c.PayloadBytes, c.MetaBytes, strings.Join(flags, ", "), len(c.Records))
		for i, cb := range c.Codebooks {
			fmt.Fprintf(w, "  codebook %d: %s\n", i, joinInts(cb[:]))
		}
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintln(tw, "#\tkind\tname\tdtype\tshape\tformat\tchunk\tchunks\traw\tescapes\tesc %\traw blocks\tbytes\traw bytes\tratio\t  chunk mix\t")
		for i, r := range c.Records {
			if r.Kind == "blob" {
				fmt.Fprintf(tw, "%d\tblob\t\t\t\t(inline)\t\t\t\t\t\t\t-\t%d\t\t\t\n", i, r.RawBytes)
				continue
			}
			esc, escPct, rawBlocks := "", "", ""
			if r.EscapeRate != nil {
				esc, escPct = fmt.Sprint(*r.Escapes), fmt.Sprintf("%.4f", 100**r.EscapeRate)
			}
			if hasChunks(r.Mix, "zf12") {
				rawBlocks = fmt.Sprint(r.RawBlocks)
			}
			fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%d\t%d\t%.4f\t  %s\t\n", i, r.Kind, r.Name, r.DType,
				shapeString(r.Shape), r.Format, codedCell(&r, r.Chunk), codedCell(&r, r.Chunks),
				codedCell(&r, r.RawChunks), esc, escPct, rawBlocks, *r.PayloadBytes, r.RawBytes,
				ratio(int64(r.RawBytes), int64(*r.PayloadBytes)), mixString(r.Mix))
		}
		tw.Flush()
		for i, r := range c.Records {
			if len(r.ChunkList) == 0 {
				continue
			}
			fmt.Fprintf(w, "\n  record %d %q chunks:\n", i, r.Name)
			tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
			fmt.Fprintln(tw, "  chunk\tformat\tkind\tvalues\twindow\tescapes\traw blocks\tside offset\tcrc\t")
			for _, ch := range r.ChunkList {
				win := "-"
				if ch.Window != nil {
					win = fmt.Sprint(*ch.Window)
				}
				esc := "-"
				if ch.Escapes != nil {
					esc = fmt.Sprint(*ch.Escapes)
				}
				fmt.Fprintf(tw, "  %d\t%s\t%s\t%d\t%s\t%s\t%d\t%d\t%08x\t\n", ch.Index, ch.Format, ch.Kind, ch.Values, win,
					esc, ch.RawBlocks, ch.SideOffset, ch.CRC)
			}
			tw.Flush()
		}
	}
}

// hasChunks reports whether any chunk of a tensor is coded in format.
func hasChunks(m []codec.MixCount, format string) bool {
	for _, x := range m {
		if x.Format == format {
			return true
		}
	}
	return false
}

// mixString is a tensor's chunk mix in one cell: "splitzip4 31, splitzip4/raw 1".
func mixString(m []codec.MixCount) string {
	parts := make([]string, len(m))
	for i, x := range m {
		parts[i] = fmt.Sprintf("%s %d", x.Format, x.Chunks)
		if x.Kind != "coded" {
			parts[i] = fmt.Sprintf("%s/%s %d", x.Format, x.Kind, x.Chunks)
		}
	}
	return strings.Join(parts, ", ")
}

// codedCell is n for a coded record and blank for a stored one, which has no chunks.
func codedCell(r *recordOut, n uint64) string {
	if r.Chunks == 0 {
		return ""
	}
	return fmt.Sprint(n)
}

func shapeString(s []uint64) string {
	parts := make([]string, len(s))
	for i, d := range s {
		parts[i] = fmt.Sprint(d)
	}
	return "[" + strings.Join(parts, ",") + "]"
}

func joinInts[T ~uint8 | ~int](xs []T) string {
	parts := make([]string, len(xs))
	for i, x := range xs {
		parts[i] = fmt.Sprint(x)
	}
	return strings.Join(parts, " ")
}
