package layout

import "testing"

func TestChunkShiftFor(t *testing.T) {
	for _, c := range []struct {
		n    uint64
		want uint
	}{
		{1, SmallChunkShift}, {1 << 19, 13}, {1 << 20, 14}, {1 << 21, 15}, {1 << 22, 16}, {1 << 28, 16},
		{(1 << 22) - 1, 15},
	} {
		got := ChunkShiftFor(c.n)
		if got != c.want {
			t.Errorf("ChunkShiftFor(%d) = %d, want %d", c.n, got, c.want)
		}
		if got < MinChunkShift || got > MaxChunkShift {
			t.Errorf("ChunkShiftFor(%d) = %d outside the format's range", c.n, got)
		}
	}
}

func TestHuffShiftFor(t *testing.T) {
	for _, c := range []struct {
		n    uint64
		want uint
	}{
		{1, HuffSmallShift}, {1 << 14, 14}, {1 << 20, 14}, {1<<21 - 1, 14}, {1 << 21, 15}, {1<<22 - 1, 15},
		{1 << 22, 16}, {1 << 28, HuffDefaultShift},
	} {
		got := HuffShiftFor(c.n)
		if got != c.want {
			t.Errorf("HuffShiftFor(%d) = %d, want %d", c.n, got, c.want)
		}
		if got < HuffMinShift || got > HuffMaxShift {
			t.Errorf("HuffShiftFor(%d) = %d outside the format's range", c.n, got)
		}
	}
}
