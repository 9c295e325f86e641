package cudabridge

import (
	"bytes"
	"encoding/binary"
	"errors"
	"reflect"
	"strings"
	"testing"
)

func sampleHandshake() *Handshake {
	return &Handshake{
		DeviceUUID: "00112233445566778899aabbccddeeff",
		DriverUUID: "ffeeddccbbaa99887766554433221100",
		Device:     "NVIDIA H200",
		Buffers: []BufferDesc{
			{Name: "src", FD: 0, Handle: HandleVulkanFD, Dedicated: true, AllocSize: 1 << 21, Offset: 0, Size: 2 * 4096 * 128,
				DType: "bf16", Shape: []uint64{4096, 128}},
			{Name: "kv.pool", FD: 2, Handle: HandleCUDAVMMFD, AllocSize: 2 << 20, Offset: 4096, Size: 1 << 20,
				DType: "u8", Shape: []uint64{1 << 20}},
		},
		Semaphores: []SemaphoreDesc{{Name: "ready", FD: 1, Type: SemaphoreTimeline, Initial: 7}},
	}
}

func TestHandshakeRoundTrip(t *testing.T) {
	h := sampleHandshake()
	frame, err := MarshalHandshake(h, 3)
	if err != nil {
		t.Fatal(err)
	}
	if string(frame[:4]) != Magic || binary.LittleEndian.Uint16(frame[4:]) != ProtocolVersion ||
		FrameKind(binary.LittleEndian.Uint16(frame[6:])) != KindHandshake {
		t.Fatalf("bad header % x", frame[:16])
	}
	got, err := UnmarshalHandshake(frame, 3)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, h) {
		t.Fatalf("round trip:\n got %+v\nwant %+v", got, h)
	}
	u, err := got.UUID()
	if err != nil || FormatUUID(u) != "GPU-00112233-4455-6677-8899-aabbccddeeff" {
		t.Fatalf("UUID %v %v", FormatUUID(u), err)
	}
	if b, ok := got.Buffer("kv.pool"); !ok || b.Offset != 4096 {
		t.Fatalf("Buffer lookup: %+v %v", b, ok)
	}
	if s, ok := got.Semaphore("ready"); !ok || s.Initial != 7 {
		t.Fatalf("Semaphore lookup: %+v %v", s, ok)
	}
	// Empty lists go out as [], not null (clients in other languages iterate them).
	frame, err = MarshalHandshake(&Handshake{DeviceUUID: h.DeviceUUID}, 0)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(frame, []byte(`"buffers":[]`)) || !bytes.Contains(frame, []byte(`"semaphores":[]`)) {
		t.Fatalf("empty lists: %s", frame[16:])
	}
}

func TestHandshakeRejects(t *testing.T) {
	good := func() *Handshake { return sampleHandshake() }
	cases := []struct {
		name string
		mod  func(h *Handshake)
		nfds int
		want string
	}{
		{"fd count", func(h *Handshake) {}, 2, "but 2 fds"},
		{"fd index out of range", func(h *Handshake) { h.Buffers[0].FD = 3 }, 3, "outside"},
		{"fd index twice", func(h *Handshake) { h.Buffers[0].FD = 1 }, 3, "used twice"},
		{"negative fd index", func(h *Handshake) { h.Buffers[0].FD = -1 }, 3, "outside"},
		{"uuid", func(h *Handshake) { h.DeviceUUID = "xyz" }, 3, "device_uuid"},
		{"uuid not hex", func(h *Handshake) { h.DeviceUUID = strings.Repeat("g", 32) }, 3, "device_uuid"},
		{"name", func(h *Handshake) { h.Buffers[0].Name = "Src!" }, 3, "name"},
		{"empty name", func(h *Handshake) { h.Semaphores[0].Name = "" }, 3, "name"},
		{"duplicate name", func(h *Handshake) { h.Semaphores[0].Name = "src" }, 3, "duplicate"},
		{"handle", func(h *Handshake) { h.Buffers[0].Handle = "dma_buf" }, 3, "handle type"},
		{"vmm dedicated", func(h *Handshake) { h.Buffers[1].Dedicated = true }, 3, "dedicated"},
		{"dtype", func(h *Handshake) { h.Buffers[0].DType = "fp8" }, 3, "dtype"},
		{"shape size", func(h *Handshake) { h.Buffers[0].Shape = []uint64{4096, 129} }, 3, "size says"},
		{"empty shape", func(h *Handshake) { h.Buffers[0].Shape = nil }, 3, "dimensions"},
		{"zero dim", func(h *Handshake) { h.Buffers[0].Shape = []uint64{0, 128} }, 3, "shape"},
		{"overflowing shape", func(h *Handshake) { h.Buffers[0].Shape = []uint64{1 << 40, 1 << 40} }, 3, "shape"},
		{"offset alignment", func(h *Handshake) { h.Buffers[1].Offset = 8 }, 3, "multiple of 16"},
		{"outside allocation", func(h *Handshake) { h.Buffers[1].Offset = 2<<20 - 16 }, 3, "outside an allocation"},
		{"zero allocation", func(h *Handshake) { h.Buffers[0].AllocSize = 0 }, 3, "outside an allocation"},
		{"semaphore type", func(h *Handshake) { h.Semaphores[0].Type = "fence" }, 3, "unknown type"},
		{"binary initial", func(h *Handshake) { h.Semaphores[0].Type = SemaphoreBinary }, 3, "binary"},
	}
	for _, c := range cases {
		h := good()
		c.mod(h)
		_, err := MarshalHandshake(h, c.nfds)
		if err == nil || !errors.Is(err, ErrProtocol) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: got %v, want ErrProtocol containing %q", c.name, err, c.want)
		}
	}
}

func TestFrameRejects(t *testing.T) {
	frame, err := MarshalHandshake(sampleHandshake(), 3)
	if err != nil {
		t.Fatal(err)
	}
	mutate := func(f func(b []byte) []byte) []byte { return f(append([]byte(nil), frame...)) }
	cases := map[string][]byte{
		"short":          frame[:10],
		"magic":          mutate(func(b []byte) []byte { b[0] = 'X'; return b }),
		"version 2":      mutate(func(b []byte) []byte { b[4] = 2; return b }),
		"unknown kind":   mutate(func(b []byte) []byte { b[6] = 9; return b }),
		"control kind":   mutate(func(b []byte) []byte { b[6] = byte(KindControl); return b }),
		"crc":            mutate(func(b []byte) []byte { b[len(b)-2] ^= 1; return b }),
		"truncated":      frame[:len(frame)-1],
		"trailing bytes": append(append([]byte(nil), frame...), ' '),
		"length too big": mutate(func(b []byte) []byte { binary.LittleEndian.PutUint32(b[8:], MaxJSONPayload+1); return b }),
	}
	for name, b := range cases {
		if _, err := UnmarshalHandshake(b, 3); !errors.Is(err, ErrProtocol) {
			t.Errorf("%s: got %v, want ErrProtocol", name, err)
		}
	}
	// Payloads that are valid frames but bad JSON.
	for name, payload := range map[string]string{
		"not json":       "{",
		"null":           "null",
		"empty":          "",
		"unknown field":  `{"device_uuid":"00112233445566778899aabbccddeeff","buffers":[],"semaphores":[],"extra":1}`,
		"trailing value": `{"device_uuid":"00112233445566778899aabbccddeeff","buffers":[],"semaphores":[]} {}`,
		"trailing brace": `{"device_uuid":"00112233445566778899aabbccddeeff","buffers":[],"semaphores":[]}}`,
		"wrong type":     `{"device_uuid":"00112233445566778899aabbccddeeff","buffers":{},"semaphores":[]}`,
		"negative size":  `{"device_uuid":"00112233445566778899aabbccddeeff","buffers":[{"name":"a","fd":0,"handle":"vulkan_opaque_fd","alloc_size":-1,"offset":0,"size":2,"dtype":"u8","shape":[2]}],"semaphores":[]}`,
	} {
		if _, err := UnmarshalHandshake(AppendFrame(nil, KindHandshake, []byte(payload)), 0); !errors.Is(err, ErrProtocol) {
			t.Errorf("%s: got %v, want ErrProtocol", name, err)
		}
	}
	ok := `{"device_uuid":"00112233445566778899aabbccddeeff","buffers":[],"semaphores":[]}`
	if _, err := UnmarshalHandshake(AppendFrame(nil, KindHandshake, []byte(ok+"\n")), 0); err != nil {
		t.Errorf("trailing whitespace is fine: %v", err)
	}
	if _, err := ParseFrameHeader(AppendFrame(nil, KindData, make([]byte, 100)), 99); !errors.Is(err, ErrProtocol) {
		t.Errorf("data over the limit: %v", err)
	}
}

func TestControlMessages(t *testing.T) {
	c, err := ParseControl([]byte(`{"op":"encode","values":18446744073709551615,"ready":1,"neg":-1,"frac":1.5,"s":"x","b":true}`))
	if err != nil {
		t.Fatal(err)
	}
	if c.Op() != "encode" || c.Str("s") != "x" || !c.Bool("b") {
		t.Fatalf("fields: %v", c)
	}
	if v, ok := c.Uint("values"); !ok || v != 1<<64-1 {
		t.Errorf("max uint64: %d %v", v, ok)
	}
	if v, ok := c.Uint("ready"); !ok || v != 1 {
		t.Errorf("ready: %d %v", v, ok)
	}
	for _, k := range []string{"neg", "frac", "s", "missing"} {
		if _, ok := c.Uint(k); ok {
			t.Errorf("Uint(%q) accepted %v", k, c[k])
		}
	}
	for _, bad := range []string{``, `[]`, `{}`, `{"op":1}`, `{"op":""}`, `{"op":"x"} {}`, `null`} {
		if _, err := ParseControl([]byte(bad)); !errors.Is(err, ErrProtocol) {
			t.Errorf("ParseControl(%q) = %v, want ErrProtocol", bad, err)
		}
	}
}

func TestUUIDs(t *testing.T) {
	u := [16]byte{0xde, 0xad, 0xbe, 0xef, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}
	s := FormatUUID(u)
	for _, in := range []string{s, strings.TrimPrefix(s, "GPU-"), strings.ReplaceAll(s, "-", "")[3:]} {
		got, err := ParseUUID(in)
		if err != nil || got != u {
			t.Errorf("ParseUUID(%q) = %x, %v", in, got, err)
		}
	}
	if _, err := ParseUUID("GPU-1234"); !errors.Is(err, ErrInvalid) {
		t.Errorf("short UUID: %v", err)
	}
	devs := []DeviceInfo{{Ordinal: 0, Name: "A", UUID: [16]byte{1}}, {Ordinal: 1, Name: "B", UUID: u}}
	if d, err := MatchUUID(devs, u); err != nil || d.Ordinal != 1 {
		t.Errorf("MatchUUID: %v %v", d, err)
	}
	if _, err := MatchUUID(devs, [16]byte{9}); !errors.Is(err, ErrNoDevice) || !strings.Contains(err.Error(), "1: B") {
		t.Errorf("MatchUUID miss: %v", err)
	}
}

func FuzzHandshake(f *testing.F) {
	frame, _ := MarshalHandshake(sampleHandshake(), 3)
	f.Add(frame, 3)
	f.Add(AppendFrame(nil, KindHandshake, []byte(`{"device_uuid":"00112233445566778899aabbccddeeff","buffers":[],"semaphores":[]}`)), 0)
	f.Add([]byte("VKZB\x01\x00\x01\x00"), 1)
	f.Fuzz(func(t *testing.T, b []byte, nfds int) {
		if nfds < 0 || nfds > MaxFDs {
			return
		}
		h, err := UnmarshalHandshake(b, nfds)
		if err != nil {
			if !errors.Is(err, ErrProtocol) {
				t.Fatalf("error not ErrProtocol: %v", err)
			}
			return
		}
		// Whatever decodes must re-encode and decode to the same thing.
		again, err := MarshalHandshake(h, nfds)
		if err != nil {
			t.Fatalf("re-marshal: %v", err)
		}
		h2, err := UnmarshalHandshake(again, nfds)
		if err != nil || !reflect.DeepEqual(normalise(h), normalise(h2)) {
			t.Fatalf("re-decode: %v\n%+v\n%+v", err, h, h2)
		}
	})
}

func normalise(h *Handshake) *Handshake {
	c := *h
	if c.Buffers == nil {
		c.Buffers = []BufferDesc{}
	}
	if c.Semaphores == nil {
		c.Semaphores = []SemaphoreDesc{}
	}
	return &c
}
