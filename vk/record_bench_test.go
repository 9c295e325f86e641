package vk_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vkzip/vkzip/vk"
	"github.com/vkzip/vkzip/vk/vktest"
)

// BenchmarkRecord measures recording alone (Begin, 16 dispatches that
// alternate between two pipelines and bindings so every bind is recorded,
// a barrier after each, End): the per-dispatch cost of the recording path.
func BenchmarkRecord(b *testing.B) {
	dev := vktest.OpenTestDevice(b)
	p1 := newPipeline(b, dev, vk.PipelineDesc{Name: "inc1", SPIRV: incSPV, Bindings: 1, PushConstantSize: 8})
	p2 := newPipeline(b, dev, vk.PipelineDesc{Name: "inc2", SPIRV: incSPV, Bindings: 1, PushConstantSize: 8,
		Spec: []vk.SpecConst{}})
	buf, err := dev.NewBuffer(4*256, vk.DeviceLocal)
	require.NoError(b, err)
	b1, err := dev.NewBindings(p1, []vk.BufferRange{{Buf: buf}})
	require.NoError(b, err)
	b2, err := dev.NewBindings(p2, []vk.BufferRange{{Buf: buf}})
	require.NoError(b, err)
	cmd, err := dev.NewCommands()
	require.NoError(b, err)
	push := push32(256, 1)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if err := cmd.Begin(); err != nil {
			b.Fatal(err)
		}
		for k := 0; k < 8; k++ {
			cmd.Dispatch(p1, b1, push, 4, 1, 1)
			cmd.Barrier()
			cmd.Dispatch(p2, b2, push, 4, 1, 1)
			cmd.Barrier()
		}
		if err := cmd.End(); err != nil {
			b.Fatal(err)
		}
	}
}
