package shaders

import (
	"encoding/binary"
	"reflect"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestLookupCoversKernels: every kernel with SPIR-V has exactly one contract, and every contract a kernel.
func TestLookupCoversKernels(t *testing.T) {
	for _, n := range Names {
		k := Lookup(n)
		require.NotNil(t, k, "kernel %s has no contract in contracts.go", n)
		require.Equal(t, n, k.Name)
	}
	seen := map[string]bool{}
	for _, k := range Kernels {
		require.False(t, seen[k.Name], "%s declared twice", k.Name)
		seen[k.Name] = true
		require.Contains(t, Names, k.Name, "contract %s names no kernel", k.Name)
	}
	ents, err := spv.ReadDir(".")
	require.NoError(t, err)
	for _, e := range ents {
		n := e.Name()[:len(e.Name())-len(".spv")]
		require.NotNil(t, Lookup(n), "%s has no contract", e.Name())
	}
	require.Nil(t, Lookup("no_such_kernel"))
}

// TestContractsWellFormed checks what the GLSL rules and the host need of each declaration: unique names and
// IDs, push fields of uint32 or [N]uint32 with a glsl tag, vectors aligned as std430 aligns them.
func TestContractsWellFormed(t *testing.T) {
	for _, k := range Kernels {
		names := map[string]bool{}
		for _, b := range k.Bindings {
			require.False(t, names[b.Name], "%s: binding %s twice", k.Name, b.Name)
			names[b.Name] = true
			require.False(t, b.ReadOnly && b.WriteOnly, "%s: %s both readonly and writeonly", k.Name, b.Name)
		}
		ids, snames := map[uint32]bool{}, map[string]bool{}
		for _, s := range k.Spec {
			require.False(t, ids[s.ID], "%s: constant_id %d twice", k.Name, s.ID)
			require.False(t, snames[s.Name], "%s: %s twice", k.Name, s.Name)
			ids[s.ID], snames[s.Name] = true, true
			require.Equal(t, s.ID, k.SpecID(s.Name))
		}
		require.Equal(t, uint32(0), k.SpecID("WG"), "%s: WG is local_size_x_id 0", k.Name)
		if k.Push == nil {
			require.Zero(t, k.PushSize())
			continue
		}
		require.Equal(t, reflect.Struct, k.Push.Kind())
		require.NotZero(t, k.PushSize())
		require.Zero(t, k.PushSize()%4)
		for _, f := range pushFields(k.Push) {
			require.NotEmpty(t, f.Tag.Get("glsl"), "%s.%s has no glsl tag", k.Push.Name(), f.Name)
			switch {
			case f.Type.Kind() == reflect.Uint32:
			case f.Type.Kind() == reflect.Array && f.Type.Elem().Kind() == reflect.Uint32:
				if n := f.Type.Len(); n == 2 || n == 4 {
					require.Zero(t, f.Offset%(4*uintptr(n)), "%s.%s: uvec%d at offset %d", k.Push.Name(), f.Name, n, f.Offset)
				}
			default:
				t.Fatalf("%s.%s: type %s is neither uint32 nor [N]uint32", k.Push.Name(), f.Name, f.Type)
			}
		}
	}
}

func TestSpecIDPanicsOnUnknownName(t *testing.T) {
	k := Lookup("sz4_encode")
	require.Equal(t, uint32(1), k.SpecID("SHIFT"))
	require.Panics(t, func() { k.SpecID("PROF") })
	require.Equal(t, uint32(3), k.Binding("table"))
	require.Panics(t, func() { k.Binding("nope") })
}

func TestPushBytes(t *testing.T) {
	p := SZ4EncodePush{CB: [4]uint32{1, 2, 3, 4}, ChunkCRC: ChunkCRC{Chunks: 0x11223344}, TableBase: 0xAABBCCDD}
	b := PushBytes(&p)
	require.Len(t, b, int(Lookup("sz4_encode").PushSize()))
	require.Equal(t, uint32(3), binary.LittleEndian.Uint32(b[8:]))
	require.Equal(t, uint32(0x11223344), binary.LittleEndian.Uint32(b[16:]))
	require.Equal(t, uint32(0xAABBCCDD), binary.LittleEndian.Uint32(b[len(b)-4:]))
	p.LastLen = 7 // the slice aliases the struct
	require.Equal(t, uint32(7), binary.LittleEndian.Uint32(b[28:]))
	require.Zero(t, testing.AllocsPerRun(100, func() { _ = PushBytes(&p) }))
	require.True(t, slices.Equal(b, PushBytes(&p)))
}
