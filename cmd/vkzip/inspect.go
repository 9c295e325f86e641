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

// The JSON output is codec.Info with the input's name and, with --chunks, each coded record's chunk list.
type inspectOut struct {
	Input      string         `json:"input"`
	Bytes      uint64         `json:"bytes"`
	RawBytes   uint64         `json:"raw_bytes"`
	Ratio      float64        `json:"ratio"`
	Containers []containerOut `json:"containers"`
}

type containerOut struct {
	codec.ContainerInfo
	Records []recordOut `json:"records"` // shadows ContainerInfo.Records
}

type recordOut struct {
	codec.RecordInfo
	ChunkList []chunkOut `json:"chunk_list,omitempty"`
}

// chunkOut is one chunk table entry, with its index.
type chunkOut struct {
	Index uint64 `json:"index"`
	codec.ChunkInfo
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
	out := inspectOut{Input: pos[0], Bytes: info.Bytes, RawBytes: info.RawBytes, Ratio: info.Ratio}
	for _, c := range info.Containers {
		co := containerOut{ContainerInfo: c}
		co.ContainerInfo.Records = nil
		for _, r := range c.Records {
			co.Records = append(co.Records, recordOut{RecordInfo: r})
		}
		out.Containers = append(out.Containers, co)
	}
	if *chunks {
		for ci, c := range info.Containers {
			for ri, r := range c.Records {
				for k, ch := range r.ChunkList {
					rec := &out.Containers[ci].Records[ri]
					rec.ChunkList = append(rec.ChunkList, chunkOut{Index: uint64(k), ChunkInfo: ch})
				}
			}
		}
	}
	if *asJSON {
		return writeJSON(os.Stdout, out)
	}
	printInspect(os.Stdout, &out)
	return nil
}

func printInspect(w io.Writer, out *inspectOut) {
	fmt.Fprintf(w, "%s: %d bytes, %d container(s), decodes to %d bytes, ratio %.4f\n", shown(out.Input, "stdin"),
		out.Bytes, len(out.Containers), out.RawBytes, out.Ratio)
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
			c.Bytes, c.MetaBytes, strings.Join(flags, ", "), len(c.Records))
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
			if hasChunks(r.Mix, "splitzip4") {
				esc, escPct = fmt.Sprint(r.Escapes), escPercent(&r.RecordInfo)
			}
			if hasChunks(r.Mix, "zf12") {
				rawBlocks = fmt.Sprint(r.RawBlocks)
			}
			fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%d\t%d\t%.4f\t  %s\t\n", i, r.Kind, r.Name, r.DType,
				shapeString(r.Shape), r.Format, codedCell(&r.RecordInfo, r.ChunkSize), codedCell(&r.RecordInfo, r.Chunks),
				codedCell(&r.RecordInfo, r.RawChunks), esc, escPct, rawBlocks, r.Bytes, r.RawBytes,
				ratio(int64(r.RawBytes), int64(r.Bytes)), mixString(r.Mix))
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
				fmt.Fprintf(tw, "  %d\t%s\t%s\t%d\t%s\t%d\t%d\t%d\t%08x\t\n", ch.Index, ch.Format, ch.Kind, ch.Values, win,
					ch.Escapes, ch.RawBlocks, ch.SideOffset, ch.CRC)
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

func escPercent(r *codec.RecordInfo) string {
	if r.Chunks == 0 {
		return ""
	}
	return fmt.Sprintf("%.4f", 100*r.EscapeRate)
}

// codedCell is n for a coded record and blank for a stored one, which has no chunks.
func codedCell(r *codec.RecordInfo, n uint64) string {
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
