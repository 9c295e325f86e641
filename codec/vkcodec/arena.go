package vkcodec

import (
	"github.com/vkzip/vkzip/vk"
)

// loc is a byte range of a device buffer.
type loc struct {
	buf  *vk.Buffer
	off  uint64
	size uint64
}

func (l loc) rng() vk.BufferRange { return vk.BufferRange{Buf: l.buf, Offset: l.off, Size: l.size} }

// bytes is the mapped view of a host-visible loc.
func (l loc) bytes() []byte {
	b, err := l.buf.Bytes()
	if err != nil {
		return nil
	}
	return b[l.off : l.off+l.size]
}

// arena hands out 256-byte-aligned regions from slabs of one buffer kind. Slabs are kept between calls (reset
// rewinds), so a session that repeats similar work allocates nothing after the first call.
type arena struct {
	dev     *vk.Device
	kind    vk.BufferKind
	slabMax uint64 // largest slab: at most one binding's range and one allocation
	slabs   []*vk.Buffer
	used    []uint64
}

const regionAlign = 256 // ≥ every device's minStorageBufferOffsetAlignment (the spec's maximum)

const minSlab = 64 << 20

func (a *arena) reset() {
	for i := range a.used {
		a.used[i] = 0
	}
}

// alloc returns a region of size bytes (rounded up to 16, at least 16) in one slab.
func (a *arena) alloc(size uint64) (loc, error) {
	size = max((size+15)&^15, 16)
	if size > a.slabMax {
		return loc{}, errTooBig(size, a.slabMax)
	}
	for i, s := range a.slabs {
		off := (a.used[i] + regionAlign - 1) &^ (regionAlign - 1)
		if off+size <= s.Size() {
			a.used[i] = off + size
			return loc{buf: s, off: off, size: size}, nil
		}
	}
	n := min(max(size, minSlab), a.slabMax)
	s, err := a.dev.NewBuffer(n, a.kind)
	if err != nil {
		return loc{}, err
	}
	a.slabs = append(a.slabs, s)
	a.used = append(a.used, size)
	return loc{buf: s, off: 0, size: size}, nil
}

// bytes is the total size of the arena's slabs.
func (a *arena) bytes() uint64 {
	var n uint64
	for _, s := range a.slabs {
		n += s.Size()
	}
	return n
}

func (a *arena) close() {
	for _, s := range a.slabs {
		s.Close()
	}
	a.slabs, a.used = nil, nil
}

// view is a binding range plus the offset of the data within it: bindings must start at aligned offsets, data in
// a caller's buffer need not.
type view struct {
	l    loc
	base uint64 // bytes from the binding's start to the data
}

func viewOf(l loc) view { return view{l: l} }

// viewAt binds size bytes at off of buf, starting the binding at the aligned offset below.
func viewAt(buf *vk.Buffer, off, size uint64) view {
	a := off &^ (regionAlign - 1)
	return view{l: loc{buf: buf, off: a, size: max(size+off-a, 16)}, base: off - a}
}
