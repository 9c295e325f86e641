package vk_test

import (
	"bytes"
	"context"
	_ "embed"
	"encoding/binary"
	"errors"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vkzip/vkzip/vk"
	"github.com/vkzip/vkzip/vk/vktest"
)

var (
	//go:embed testdata/add.spv
	addSPV []byte
	//go:embed testdata/inc.spv
	incSPV []byte
	//go:embed testdata/spin.spv
	spinSPV []byte
	//go:embed testdata/subgroup.spv
	subgroupSPV []byte
)

func u32s(n int, f func(i int) uint32) []byte {
	b := make([]byte, 4*n)
	for i := 0; i < n; i++ {
		binary.LittleEndian.PutUint32(b[4*i:], f(i))
	}
	return b
}

func push32(v ...uint32) []byte {
	b := make([]byte, 4*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint32(b[4*i:], x)
	}
	return b
}

// submitWait submits cmd and waits for it to finish, failing tb on either error; the finished submission.
func submitWait(tb testing.TB, dev *vk.Device, cmd *vk.Commands) *vk.Submission {
	tb.Helper()
	sub, err := dev.Submit(cmd)
	require.NoError(tb, err)
	require.NoError(tb, sub.Wait(context.Background()))
	return sub
}

func newPipeline(t testing.TB, dev *vk.Device, desc vk.PipelineDesc) *vk.Pipeline {
	t.Helper()
	p, err := dev.NewPipeline(desc)
	require.NoError(t, err)
	t.Cleanup(func() { p.Close() })
	return p
}

func TestDevices(t *testing.T) {
	inst := vktest.OpenTestInstance(t)
	devs, err := inst.Devices()
	require.NoError(t, err)
	if len(devs) == 0 {
		vktest.Unavailable(t, "no physical devices")
	}
	usable := 0
	for i, d := range devs {
		t.Logf("%s driver=%q info=%q ops=%s exts=%d hvdl=%v(%d MiB) maxAlloc=%d MiB",
			d, d.DriverName, d.DriverInfo, d.SubgroupOps, len(d.Extensions), d.HostVisibleDeviceLocal,
			d.HostVisibleDeviceLocalBytes>>20, d.Limits.MaxMemoryAllocationSize>>20)
		assert.Equal(t, i, d.Index)
		assert.NotEmpty(t, d.Name)
		assert.True(t, sort.StringsAreSorted(d.Extensions), "extensions sorted")
		if !d.Usable {
			assert.NotEmpty(t, d.Reason)
			continue
		}
		usable++
		assert.Empty(t, d.Reason)
		assert.NotZero(t, d.SubgroupSize)
		assert.Zero(t, d.SubgroupSize&(d.SubgroupSize-1), "subgroup size power of two")
		assert.True(t, d.SubgroupOps.HasBasic() && d.SubgroupOps.HasBallot() && d.SubgroupOps.HasArithmetic())
		assert.True(t, d.SubgroupStages.HasCompute())
		assert.LessOrEqual(t, d.MinSubgroupSize, d.SubgroupSize)
		assert.GreaterOrEqual(t, d.MaxSubgroupSize, d.SubgroupSize)
		l := d.Limits
		assert.GreaterOrEqual(t, l.MaxStorageBufferRange, uint32(1<<27), "spec minimum 2^27")
		assert.GreaterOrEqual(t, l.MaxComputeWorkGroupCount[0], uint32(65535))
		assert.GreaterOrEqual(t, l.MaxComputeWorkGroupInvocations, uint32(128))
		assert.GreaterOrEqual(t, l.MaxComputeWorkGroupSize[0], uint32(128))
		assert.GreaterOrEqual(t, l.MaxComputeSharedMemorySize, uint32(16384))
		assert.GreaterOrEqual(t, l.MaxPushConstantsSize, uint32(128))
		assert.NotZero(t, l.MinStorageBufferOffsetAlignment)
		assert.Zero(t, l.MinStorageBufferOffsetAlignment&(l.MinStorageBufferOffsetAlignment-1))
		assert.GreaterOrEqual(t, l.MaxMemoryAllocationSize, uint64(1<<30))
		assert.GreaterOrEqual(t, d.ComputeQueueFamily, 0)
		if l.TimestampValidBits > 0 {
			assert.Greater(t, l.TimestampPeriod, float32(0))
		}
		assert.NotEqual(t, [16]byte{}, d.UUID, "deviceUUID")
		assert.NotZero(t, d.DeviceLocalBytes)
		assert.Regexp(t, `^\d+\.\d+\.\d+$`, d.APIVersion)
		assert.GreaterOrEqual(t, d.APIVersionRaw, vk.MakeVersion(1, 1, 0))
		if strings.Contains(d.Name, "llvmpipe") {
			assert.Equal(t, "Mesa (lavapipe)", d.VendorName)
			assert.Equal(t, vk.DeviceTypeCPU, d.Type)
			assert.Equal(t, "cpu", d.Type.String())
			assert.Equal(t, "llvmpipe", d.DriverName)
			assert.True(t, d.HostVisibleDeviceLocal, "lavapipe is UMA")
			switch os.Getenv("LP_NATIVE_VECTOR_WIDTH") {
			case "128":
				assert.Equal(t, uint32(4), d.SubgroupSize)
			case "256":
				assert.Equal(t, uint32(8), d.SubgroupSize)
			}
		}
	}
	if usable == 0 {
		vktest.Unavailable(t, "no usable device among %d", len(devs))
	}
}

func fakeDevices() []vk.DeviceInfo {
	return []vk.DeviceInfo{
		{Index: 0, Name: "llvmpipe (LLVM 15.0.6, 256 bits)", VendorName: "Mesa (lavapipe)", Type: vk.DeviceTypeCPU, Usable: true},
		{Index: 1, Name: "NVIDIA H200", VendorName: "NVIDIA", DriverName: "NVIDIA", Type: vk.DeviceTypeDiscrete, Usable: true},
		{Index: 2, Name: "Old GPU", VendorName: "Intel", Type: vk.DeviceTypeIntegrated, Usable: false, Reason: "Vulkan 1.0.0 < 1.1"},
	}
}

func TestSelectDevice(t *testing.T) {
	devs := fakeDevices()
	t.Setenv(vk.EnvDevice, "")

	d, err := vk.SelectDevice(devs, "")
	require.NoError(t, err)
	assert.Equal(t, 1, d.Index, "discrete preferred")

	d, err = vk.SelectDevice(devs, "0")
	require.NoError(t, err)
	assert.Equal(t, 0, d.Index)

	d, err = vk.SelectDevice(devs, "LLVMPIPE")
	require.NoError(t, err)
	assert.Equal(t, 0, d.Index)

	d, err = vk.SelectDevice(devs, "lavapipe") // vendor-name fallback
	require.NoError(t, err)
	assert.Equal(t, 0, d.Index)

	d, err = vk.SelectDevice(devs, "h200")
	require.NoError(t, err)
	assert.Equal(t, 1, d.Index)

	t.Setenv(vk.EnvDevice, "llvm")
	d, err = vk.SelectDevice(devs, "")
	require.NoError(t, err)
	assert.Equal(t, 0, d.Index, "env var used when spec is empty")
	d, err = vk.SelectDevice(devs, "1")
	require.NoError(t, err)
	assert.Equal(t, 1, d.Index, "explicit spec beats env var")
	t.Setenv(vk.EnvDevice, "")

	for _, bad := range []string{"7", "radeon", "2", "old"} {
		_, err = vk.SelectDevice(devs, bad)
		require.Error(t, err, bad)
		assert.ErrorIs(t, err, vk.ErrNoDevice)
		assert.Contains(t, err.Error(), "NVIDIA H200", "error lists devices")
		assert.Contains(t, err.Error(), "llvmpipe")
	}
	_, err = vk.SelectDevice(devs, "old")
	assert.Contains(t, err.Error(), "not usable")

	_, err = vk.SelectDevice(nil, "")
	assert.ErrorIs(t, err, vk.ErrNoDevice)
	_, err = vk.SelectDevice(devs[2:], "")
	assert.ErrorIs(t, err, vk.ErrNoDevice)
}

func TestSelectRealDevice(t *testing.T) {
	inst := vktest.OpenTestInstance(t)
	devs, err := inst.Devices()
	require.NoError(t, err)
	best, err := vk.SelectDevice(devs, "")
	if err != nil {
		vktest.Unavailable(t, "%v", err)
	}
	byIndex, err := vk.SelectDevice(devs, "0")
	if devs[0].Usable {
		require.NoError(t, err)
		assert.Equal(t, devs[0].UUID, byIndex.UUID)
	}
	byName, err := vk.SelectDevice(devs, strings.ToUpper(best.Name[:3]))
	require.NoError(t, err)
	assert.Contains(t, strings.ToLower(byName.Name), strings.ToLower(best.Name[:3]))
	_, err = vk.SelectDevice(devs, "no-such-device-xyz")
	assert.ErrorIs(t, err, vk.ErrNoDevice)
	assert.Contains(t, err.Error(), best.Name)
}

// runAdd uploads n values, runs add.comp (ADD spec constant, push
// constants n/extra) and returns the downloaded result.
func runAdd(t testing.TB, dev *vk.Device, n int, add, extra uint32) {
	t.Helper()
	ctx := context.Background()
	const local = 128
	p := newPipeline(t, dev, vk.PipelineDesc{
		Name: "add", SPIRV: addSPV, Bindings: 2, PushConstantSize: 8,
		Spec: []vk.SpecConst{{ID: 0, Value: local}, {ID: 1, Value: add}},
	})
	in, err := dev.NewBuffer(uint64(4*n), vk.DeviceLocal)
	require.NoError(t, err)
	defer in.Close()
	out, err := dev.NewBuffer(uint64(4*n), vk.DeviceLocal)
	require.NoError(t, err)
	defer out.Close()
	src := u32s(n, func(i int) uint32 { return uint32(i * 7) })
	require.NoError(t, dev.Upload(ctx, in, 0, src))

	b, err := dev.NewBindings(p, []vk.BufferRange{{Buf: in}, {Buf: out}})
	require.NoError(t, err)
	defer b.Close()
	cmd, err := dev.NewCommands()
	require.NoError(t, err)
	defer cmd.Close()
	require.NoError(t, cmd.Begin())
	cmd.Dispatch(p, b, push32(uint32(n), extra), uint32((n+local-1)/local), 1, 1)
	cmd.BarrierToHost()
	require.NoError(t, cmd.End())
	sub := submitWait(t, dev, cmd)
	assert.True(t, sub.Done())

	got := make([]byte, 4*n)
	require.NoError(t, dev.Download(ctx, got, out, 0))
	for i := 0; i < n; i++ {
		v := binary.LittleEndian.Uint32(got[4*i:])
		if want := uint32(i*7) + add + extra; v != want {
			t.Fatalf("out[%d] = %d, want %d", i, v, want)
		}
	}
}

func TestAddRoundTrip(t *testing.T) {
	dev := vktest.OpenTestDevice(t)
	before := dev.Stats()
	const n = 1 << 20
	runAdd(t, dev, n, 3, 5)
	st := dev.Stats()
	assert.Equal(t, uint64(4*n), st.BytesUploaded-before.BytesUploaded)
	assert.Equal(t, uint64(4*n), st.BytesDownloaded-before.BytesDownloaded)
	assert.Equal(t, uint64(1), st.Readbacks-before.Readbacks)
	assert.GreaterOrEqual(t, st.Submissions-before.Submissions, uint64(3), "upload + dispatch + download")
	assert.Equal(t, int64(0), st.InFlight)
}

// stagedBuffer opens a test device with the given staging size and returns it with a device-local buffer of size
// bytes and n pattern bytes (byte i is i·mul + add) to put there.
func stagedBuffer(t *testing.T, staging, size uint64, n int, mul, add byte) (*vk.Device, *vk.Buffer, []byte) {
	dev := vktest.OpenTestDeviceWith(t, vktest.Options{Device: vk.DeviceOptions{StagingSize: staging}})
	buf, err := dev.NewBuffer(size, vk.DeviceLocal)
	require.NoError(t, err)
	src := make([]byte, n)
	for i := range src {
		src[i] = byte(i)*mul + add
	}
	return dev, buf, src
}

func TestStagingChunks(t *testing.T) {
	// A tiny staging size forces many chunks and odd tails.
	dev, buf, src := stagedBuffer(t, 4096, 100_003, 100_000, 31, 0)
	ctx := context.Background()
	require.NoError(t, dev.Upload(ctx, buf, 3, src))
	got := make([]byte, len(src))
	require.NoError(t, dev.Download(ctx, got, buf, 3))
	assert.Equal(t, src, got)
	assert.Error(t, dev.Upload(ctx, buf, 5, src), "out of range")
	assert.ErrorIs(t, dev.Download(ctx, make([]byte, 10), buf, 100_000), vk.ErrInvalid)
}

func TestUploadPieces(t *testing.T) {
	for _, staging := range []uint64{0, 64} { // default; too small for both pieces: one Upload each
		dev := vktest.OpenTestDeviceWith(t, vktest.Options{Device: vk.DeviceOptions{StagingSize: staging}})
		ctx := context.Background()
		buf, err := dev.NewBuffer(4096, vk.DeviceLocal)
		require.NoError(t, err)
		want := bytes.Repeat([]byte{0xEE}, 4096)
		require.NoError(t, dev.Upload(ctx, buf, 0, want))
		head, tail := make([]byte, 61), make([]byte, 7)
		for i := range head {
			head[i] = byte(i*7 + 1)
		}
		for i := range tail {
			tail[i] = byte(200 + i)
		}
		copy(want[3:], head)
		copy(want[4000:], tail)
		before := dev.Stats()
		require.NoError(t, dev.UploadPieces(ctx, buf, []vk.Piece{{Off: 3, Data: head}, {Off: 100}, {Off: 4000, Data: tail}}))
		subs := dev.Stats().Submissions - before.Submissions
		if staging == 0 {
			assert.Equal(t, uint64(1), subs, "pieces that fit the staging buffer take one submission")
		} else {
			assert.Equal(t, uint64(2), subs)
		}
		got := make([]byte, len(want))
		require.NoError(t, dev.Download(ctx, got, buf, 0))
		assert.Equal(t, want, got)
		assert.ErrorIs(t, dev.UploadPieces(ctx, buf, []vk.Piece{{Off: 0, Data: head}, {Off: 4090, Data: tail}}), vk.ErrInvalid)
		require.NoError(t, dev.Download(ctx, got, buf, 0))
		assert.Equal(t, want, got, "a refused call writes no piece")
	}
}

func TestStartFetch(t *testing.T) {
	dev, buf, src := stagedBuffer(t, 256, 4096, 4096, 13, 5)
	ctx := context.Background()
	require.NoError(t, dev.Upload(ctx, buf, 0, src))
	head, tail := bytes.Repeat([]byte{0xA5}, 37), bytes.Repeat([]byte{0xA5}, 12) // poisoned: the fetch must write them
	before := dev.Stats()
	f, err := dev.StartFetch(buf, []vk.Piece{{Off: 5, Data: head}, {Off: 900}, {Off: 4084, Data: tail}})
	require.NoError(t, err)
	// Work submitted after the fetch runs after it: overwrite the source; the fetch still sees the old bytes.
	cmd, err := dev.NewCommands()
	require.NoError(t, err)
	require.NoError(t, cmd.Begin())
	cmd.FillBuffer(buf, 0, 4096, 0)
	require.NoError(t, cmd.End())
	sub, err := dev.Submit(cmd)
	require.NoError(t, err)
	require.NoError(t, f.Wait(ctx))
	require.NoError(t, sub.Wait(ctx))
	assert.Equal(t, src[5:42], head)
	assert.Equal(t, src[4084:], tail)
	after := dev.Stats()
	assert.Equal(t, uint64(2), after.Submissions-before.Submissions, "one submission for the pieces, one for the fill")
	assert.Equal(t, uint64(49), after.BytesDownloaded-before.BytesDownloaded)
	require.NoError(t, cmd.Close())

	_, err = dev.StartFetch(buf, []vk.Piece{{Off: 4090, Data: make([]byte, 8)}})
	assert.ErrorIs(t, err, vk.ErrInvalid, "a piece past the buffer's end")
	_, err = dev.StartFetch(buf, []vk.Piece{{Off: 0, Data: make([]byte, 200)}, {Off: 1000, Data: make([]byte, 100)}})
	assert.ErrorIs(t, err, vk.ErrInvalid, "pieces larger than the staging buffer")
	empty, err := dev.StartFetch(buf, nil)
	require.NoError(t, err)
	require.NoError(t, empty.Wait(ctx))
}

func TestResubmit(t *testing.T) {
	dev := vktest.OpenTestDevice(t)
	ctx := context.Background()
	const n, rounds = 4096, 200
	p := newPipeline(t, dev, vk.PipelineDesc{Name: "inc", SPIRV: incSPV, Bindings: 1, PushConstantSize: 8})
	buf, err := dev.NewBuffer(4*n, vk.DeviceLocal)
	require.NoError(t, err)
	require.NoError(t, dev.Upload(ctx, buf, 0, u32s(n, func(i int) uint32 { return uint32(i) })))
	b, err := dev.NewBindings(p, []vk.BufferRange{{Buf: buf}})
	require.NoError(t, err)
	cmd, err := dev.NewCommands()
	require.NoError(t, err)
	require.NoError(t, cmd.Begin())
	cmd.Dispatch(p, b, push32(n, 3), n/64, 1, 1)
	cmd.Barrier()
	cmd.Dispatch(p, b, push32(n, 4), n/64, 1, 1) // same pipeline/set: no rebind
	cmd.Barrier()
	require.NoError(t, cmd.End())

	before := dev.Stats()
	for r := 0; r < rounds; r++ {
		submitWait(t, dev, cmd)
	}
	st := dev.Stats()
	assert.Equal(t, uint64(rounds), st.Submissions-before.Submissions)
	assert.Equal(t, uint64(2*rounds), st.Dispatches-before.Dispatches)
	got := make([]byte, 4*n)
	require.NoError(t, dev.Download(ctx, got, buf, 0))
	for i := 0; i < n; i++ {
		require.Equal(t, uint32(i+7*rounds), binary.LittleEndian.Uint32(got[4*i:]), "index %d", i)
	}
}

func TestRecordingErrors(t *testing.T) {
	dev := vktest.OpenTestDevice(t)
	p := newPipeline(t, dev, vk.PipelineDesc{Name: "inc", SPIRV: incSPV, Bindings: 1, PushConstantSize: 8})
	cmd, err := dev.NewCommands()
	require.NoError(t, err)

	// Not ended: Submit refuses.
	_, err = dev.Submit(cmd)
	assert.ErrorIs(t, err, vk.ErrInvalid)

	require.NoError(t, cmd.Begin())
	cmd.Dispatch(p, nil, push32(1, 1), 1, 1, 1) // missing bindings
	err = cmd.End()
	assert.ErrorIs(t, err, vk.ErrInvalid)
	_, err = dev.Submit(cmd)
	assert.ErrorIs(t, err, vk.ErrInvalid)

	buf, err := dev.NewBuffer(256, vk.DeviceLocal)
	require.NoError(t, err)
	b, err := dev.NewBindings(p, []vk.BufferRange{{Buf: buf}})
	require.NoError(t, err)
	require.NoError(t, cmd.Begin())
	cmd.Dispatch(p, b, make([]byte, 12), 1, 1, 1) // push too large
	assert.ErrorIs(t, cmd.End(), vk.ErrInvalid)
	require.NoError(t, cmd.Begin())
	cmd.Dispatch(p, b, push32(1, 1), 0, 1, 1) // zero groups
	assert.ErrorIs(t, cmd.End(), vk.ErrInvalid)
	require.NoError(t, cmd.Begin())
	cmd.FillBuffer(buf, 2, 4, 0) // misaligned
	assert.ErrorIs(t, cmd.End(), vk.ErrInvalid)
	require.NoError(t, buf.Close())
	require.NoError(t, cmd.Begin())
	cmd.Dispatch(p, b, push32(1, 1), 1, 1, 1) // bound buffer was closed
	assert.ErrorIs(t, cmd.End(), vk.ErrInvalid)

	_, err = dev.NewPipeline(vk.PipelineDesc{SPIRV: incSPV[:len(incSPV)-2], Bindings: 1})
	assert.ErrorIs(t, err, vk.ErrInvalid)
	bad := append([]byte{}, incSPV...)
	bad[0] ^= 0xff
	_, err = dev.NewPipeline(vk.PipelineDesc{SPIRV: bad, Bindings: 1})
	assert.ErrorIs(t, err, vk.ErrInvalid)
	_, err = dev.NewPipeline(vk.PipelineDesc{SPIRV: incSPV, Bindings: 1, PushConstantSize: 6})
	assert.ErrorIs(t, err, vk.ErrInvalid)
}

func TestFillAndCopy(t *testing.T) {
	dev := vktest.OpenTestDevice(t)
	a, err := dev.NewBuffer(1024, vk.DeviceLocal)
	require.NoError(t, err)
	rb, err := dev.NewBuffer(1024, vk.Readback)
	require.NoError(t, err)
	cmd, err := dev.NewCommands()
	require.NoError(t, err)
	require.NoError(t, cmd.Begin())
	cmd.FillBuffer(a, 0, 1024, 0xdeadbeef)
	cmd.Barrier()
	cmd.CopyBuffer(rb, 0, a, 0, 1024)
	cmd.BarrierToHost()
	require.NoError(t, cmd.End())
	submitWait(t, dev, cmd)
	view, err := rb.Bytes()
	require.NoError(t, err)
	for i := 0; i < 1024; i += 4 {
		require.Equal(t, uint32(0xdeadbeef), binary.LittleEndian.Uint32(view[i:]))
	}
}

func TestSubgroupShader(t *testing.T) {
	dev := vktest.OpenTestDevice(t)
	info := dev.Info()
	p := newPipeline(t, dev, vk.PipelineDesc{Name: "subgroup", SPIRV: subgroupSPV, Bindings: 1})
	buf, err := dev.NewBuffer(64, vk.Readback)
	require.NoError(t, err)
	b, err := dev.NewBindings(p, []vk.BufferRange{{Buf: buf}})
	require.NoError(t, err)
	cmd, err := dev.NewCommands()
	require.NoError(t, err)
	require.NoError(t, cmd.Begin())
	cmd.Dispatch(p, b, nil, 1, 1, 1)
	cmd.BarrierToHost()
	require.NoError(t, cmd.End())
	submitWait(t, dev, cmd)
	v, err := buf.Bytes()
	require.NoError(t, err)
	size := binary.LittleEndian.Uint32(v[0:])
	t.Logf("gl_SubgroupSize=%d reported=%d range=%d..%d", size, info.SubgroupSize, info.MinSubgroupSize, info.MaxSubgroupSize)
	if info.MinSubgroupSize == info.MaxSubgroupSize {
		assert.Equal(t, info.SubgroupSize, size)
	}
	assert.Equal(t, size, binary.LittleEndian.Uint32(v[4:]), "subgroupAdd(1)")
	assert.Equal(t, size, binary.LittleEndian.Uint32(v[8:]), "ballot bit count")
}

func TestRequiredSubgroupSize(t *testing.T) {
	dev := vktest.OpenTestDevice(t)
	info := dev.Info()
	p, err := dev.NewPipeline(vk.PipelineDesc{Name: "sg", SPIRV: subgroupSPV, Bindings: 1, RequiredSubgroupSize: info.SubgroupSize})
	require.NoError(t, err)
	assert.Equal(t, info.SubgroupSize, p.SubgroupSize())
	require.NoError(t, p.Close())
	_, err = dev.NewPipeline(vk.PipelineDesc{SPIRV: subgroupSPV, Bindings: 1, RequiredSubgroupSize: 3})
	assert.ErrorIs(t, err, vk.ErrInvalid)
	_, err = dev.NewPipeline(vk.PipelineDesc{SPIRV: subgroupSPV, Bindings: 1, RequiredSubgroupSize: 1024})
	assert.ErrorIs(t, err, vk.ErrUnsupported)
}

func TestTimestamps(t *testing.T) {
	dev := vktest.OpenTestDevice(t)
	if dev.Info().Limits.TimestampValidBits == 0 {
		t.Skip("compute queue has no timestamps")
	}
	qp, err := dev.NewQueryPool(4)
	require.NoError(t, err)
	p := newPipeline(t, dev, vk.PipelineDesc{Name: "spin", SPIRV: spinSPV, Bindings: 1, PushConstantSize: 4})
	buf, err := dev.NewBuffer(64*64*4, vk.DeviceLocal)
	require.NoError(t, err)
	b, err := dev.NewBindings(p, []vk.BufferRange{{Buf: buf}})
	require.NoError(t, err)
	cmd, err := dev.NewCommands()
	require.NoError(t, err)
	require.NoError(t, cmd.Begin())
	cmd.ResetQueries(qp, 0, 4)
	cmd.Timestamp(qp, 0)
	cmd.Dispatch(p, b, push32(2000), 64, 1, 1)
	cmd.Timestamp(qp, 1)
	cmd.Barrier()
	cmd.Dispatch(p, b, push32(2000), 64, 1, 1)
	cmd.Timestamp(qp, 2)
	require.NoError(t, cmd.End())

	// Unwritten queries report NotReady instead of blocking.
	_, err = qp.Nanos(3, 1)
	assert.Error(t, err)

	submitWait(t, dev, cmd)
	ns, err := qp.Nanos(0, 3)
	require.NoError(t, err)
	t.Logf("timestamps (ns): %v, dispatch 1 took %v", ns, time.Duration(ns[1]-ns[0]))
	assert.LessOrEqual(t, ns[0], ns[1])
	assert.LessOrEqual(t, ns[1], ns[2])
	assert.Less(t, ns[0], ns[2])
	assert.Less(t, ns[2]-ns[0], uint64(60*time.Second), "plausible ns scale")
}

func TestTicksToNanos(t *testing.T) {
	assert.Equal(t, uint64(12345), vk.TicksToNanosForTest(12345, 1))
	assert.Equal(t, uint64(1000), vk.TicksToNanosForTest(1000, 1))
	assert.Equal(t, uint64(2500), vk.TicksToNanosForTest(1000, 2.5))
	// 52.08333 ns/tick (19.2 MHz): within float32 rounding of the period.
	got := vk.TicksToNanosForTest(192_000_000, float32(1e9/19.2e6))
	assert.InDelta(t, 1e10, float64(got), 1e3)
	// Large tick counts keep full integer precision.
	big := uint64(1) << 60
	assert.Equal(t, big/2, vk.TicksToNanosForTest(big, 0.5))
}

func TestValidationClean(t *testing.T) {
	opt := vktest.Options{Instance: vk.InstanceOptions{Validation: true}}
	dev := vktest.OpenTestDeviceWith(t, opt)
	inst := dev.Instance()
	if !inst.ValidationEnabled() {
		t.Skip("VK_LAYER_KHRONOS_validation not installed")
	}
	runAdd(t, dev, 1000, 1, 2)
	// Timestamps, fill and copy too.
	if dev.Info().Limits.TimestampValidBits > 0 {
		qp, err := dev.NewQueryPool(2)
		require.NoError(t, err)
		buf, err := dev.NewBuffer(256, vk.DeviceLocal)
		require.NoError(t, err)
		cmd, err := dev.NewCommands()
		require.NoError(t, err)
		require.NoError(t, cmd.Begin())
		cmd.ResetQueries(qp, 0, 2)
		cmd.Timestamp(qp, 0)
		cmd.FillBuffer(buf, 0, 256, 7)
		cmd.Barrier()
		cmd.Timestamp(qp, 1)
		cmd.BarrierToHost()
		require.NoError(t, cmd.End())
		submitWait(t, dev, cmd)
		_, err = qp.Nanos(0, 2)
		require.NoError(t, err)
	}
	assert.Zero(t, inst.ValidationMessageCount(), "messages: %v", inst.ValidationMessages())
}

func TestValidationProvoked(t *testing.T) {
	dev := vktest.OpenTestDeviceWith(t, vktest.Options{
		Instance:                vk.InstanceOptions{Validation: true},
		AllowValidationMessages: true,
	})
	inst := dev.Instance()
	if !inst.ValidationEnabled() {
		t.Skip("VK_LAYER_KHRONOS_validation not installed; cannot provoke validation errors")
	}
	cmd, err := dev.NewCommands()
	require.NoError(t, err)
	require.NoError(t, cmd.Begin())
	// HOST_WRITE access is not supported by the COMPUTE_SHADER stage: an
	// invalid but harmless barrier (drivers ignore access masks on it).
	vk.RawBarrierForTest(cmd, 0x800, 0x800, 0x4000, 0x20)
	require.NoError(t, cmd.End())
	require.Greater(t, inst.ValidationErrorCount(), 0, "validation error caught")
	msgs := inst.ValidationMessages()
	require.NotEmpty(t, msgs)
	assert.Contains(t, strings.Join(msgs, "\n"), "VUID-vkCmdPipelineBarrier")
	t.Logf("provoked: %s", msgs[0])
}

func TestValidationRoutedPerInstance(t *testing.T) {
	// Several validation instances at once: messages go only to the
	// instance that caused them (run with -race).
	const k = 3
	devs := make([]*vk.Device, k)
	for i := range devs {
		devs[i] = vktest.OpenTestDeviceWith(t, vktest.Options{
			Instance:                vk.InstanceOptions{Validation: true},
			AllowValidationMessages: true,
		})
	}
	if !devs[0].Instance().ValidationEnabled() {
		t.Skip("VK_LAYER_KHRONOS_validation not installed")
	}
	var wg sync.WaitGroup
	for i, dev := range devs {
		wg.Add(1)
		go func(i int, dev *vk.Device) {
			defer wg.Done()
			cmd, err := dev.NewCommands()
			if !assert.NoError(t, err) {
				return
			}
			for r := 0; r < 5; r++ {
				assert.NoError(t, cmd.Begin())
				if i == 1 {
					vk.RawBarrierForTest(cmd, 0x800, 0x800, 0x4000, 0x20)
				} else {
					cmd.Barrier()
				}
				assert.NoError(t, cmd.End())
			}
		}(i, dev)
	}
	wg.Wait()
	assert.Zero(t, devs[0].Instance().ValidationMessageCount(), "%v", devs[0].Instance().ValidationMessages())
	assert.GreaterOrEqual(t, devs[1].Instance().ValidationErrorCount(), 1)
	assert.Zero(t, devs[2].Instance().ValidationMessageCount(), "%v", devs[2].Instance().ValidationMessages())
}

func spinSetup(t testing.TB, dev *vk.Device, iters uint32) (*vk.Commands, *vk.Commands) {
	t.Helper()
	p := newPipeline(t, dev, vk.PipelineDesc{Name: "spin", SPIRV: spinSPV, Bindings: 1, PushConstantSize: 4})
	mk := func() *vk.Commands {
		buf, err := dev.NewBuffer(64*64*4, vk.DeviceLocal)
		require.NoError(t, err)
		b, err := dev.NewBindings(p, []vk.BufferRange{{Buf: buf}})
		require.NoError(t, err)
		cmd, err := dev.NewCommands()
		require.NoError(t, err)
		require.NoError(t, cmd.Begin())
		cmd.Dispatch(p, b, push32(iters), 64, 1, 1)
		require.NoError(t, cmd.End())
		return cmd
	}
	return mk(), mk()
}

func TestConcurrentInFlight(t *testing.T) {
	dev := vktest.OpenTestDevice(t)
	a, b := spinSetup(t, dev, 5000)
	ctx := context.Background()
	before := dev.Stats()
	aSubmitted := make(chan struct{})
	bSubmitted := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(2)
	go func() {
		defer wg.Done()
		sub, err := dev.Submit(a)
		close(aSubmitted)
		if !assert.NoError(t, err) {
			return
		}
		<-bSubmitted // keep a unobserved until b is queued too
		assert.NoError(t, sub.Wait(ctx))
	}()
	go func() {
		defer wg.Done()
		<-aSubmitted
		sub, err := dev.Submit(b)
		close(bSubmitted)
		if !assert.NoError(t, err) {
			return
		}
		assert.NoError(t, sub.Wait(ctx))
	}()
	wg.Wait()
	st := dev.Stats()
	assert.Equal(t, uint64(2), st.Submissions-before.Submissions)
	assert.GreaterOrEqual(t, st.MaxInFlight, int64(2))
	assert.Equal(t, int64(0), st.InFlight)

	// Resubmitting while pending is refused.
	sub, err := dev.Submit(a)
	require.NoError(t, err)
	if _, err := dev.Submit(a); err != nil {
		assert.ErrorIs(t, err, vk.ErrBusy)
	} // else: already finished, which is fine
	require.NoError(t, sub.Wait(ctx))
}

func TestManyGoroutines(t *testing.T) {
	dev := vktest.OpenTestDevice(t)
	p := newPipeline(t, dev, vk.PipelineDesc{Name: "inc", SPIRV: incSPV, Bindings: 1, PushConstantSize: 8})
	const workers, rounds, n = 8, 20, 256
	ctx := context.Background()
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			buf, err := dev.NewBuffer(4*n, vk.DeviceLocal)
			if !assert.NoError(t, err) {
				return
			}
			defer buf.Close()
			assert.NoError(t, dev.Upload(ctx, buf, 0, make([]byte, 4*n)))
			b, err := dev.NewBindings(p, []vk.BufferRange{{Buf: buf}})
			if !assert.NoError(t, err) {
				return
			}
			defer b.Close()
			cmd, err := dev.NewCommands()
			if !assert.NoError(t, err) {
				return
			}
			defer cmd.Close()
			for r := 0; r < rounds; r++ {
				assert.NoError(t, cmd.Begin())
				cmd.Dispatch(p, b, push32(n, uint32(w+1)), n/64, 1, 1)
				cmd.Barrier()
				assert.NoError(t, cmd.End())
				sub, err := dev.Submit(cmd)
				if !assert.NoError(t, err) {
					return
				}
				assert.NoError(t, sub.Wait(ctx))
			}
			got := make([]byte, 4*n)
			assert.NoError(t, dev.Download(ctx, got, buf, 0))
			for i := 0; i < n; i++ {
				if v := binary.LittleEndian.Uint32(got[4*i:]); v != uint32(rounds*(w+1)) {
					t.Errorf("worker %d: v[%d]=%d", w, i, v)
					return
				}
			}
		}(w)
	}
	wg.Wait()
	assert.Equal(t, int64(0), dev.Stats().InFlight)
}

func TestWaitContext(t *testing.T) {
	dev := vktest.OpenTestDevice(t)
	a, _ := spinSetup(t, dev, 200000)
	sub, err := dev.Submit(a)
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), time.Millisecond)
	defer cancel()
	err = sub.Wait(ctx)
	if err != nil {
		assert.ErrorIs(t, err, context.DeadlineExceeded)
		if err := a.Begin(); err != nil { // may have finished meanwhile
			assert.ErrorIs(t, err, vk.ErrBusy, "still executing")
		}
	}
	require.NoError(t, sub.Wait(context.Background()))
	assert.True(t, sub.Done())
}

func TestLiveObjectsBaseline(t *testing.T) {
	baseline := vk.LiveObjects()
	ctx := context.Background()
	for round := 0; round < 3; round++ {
		inst, err := vk.NewInstance(vk.InstanceOptions{})
		if err != nil {
			vktest.Unavailable(t, "%v", err)
		}
		devs, err := inst.Devices()
		require.NoError(t, err)
		info, err := vk.SelectDevice(devs, "")
		if err != nil {
			inst.Close()
			vktest.Unavailable(t, "%v", err)
		}
		dev, err := inst.OpenDevice(info, vk.DeviceOptions{})
		require.NoError(t, err)
		assert.Greater(t, vk.LiveObjects(), baseline)
		p, err := dev.NewPipeline(vk.PipelineDesc{SPIRV: incSPV, Bindings: 1, PushConstantSize: 8})
		require.NoError(t, err)
		buf, err := dev.NewBuffer(1024, vk.DeviceLocal)
		require.NoError(t, err)
		rb, err := dev.NewBuffer(1024, vk.Readback)
		require.NoError(t, err)
		b, err := dev.NewBindings(p, []vk.BufferRange{{Buf: buf}})
		require.NoError(t, err)
		cmd, err := dev.NewCommands()
		require.NoError(t, err)
		require.NoError(t, dev.Upload(ctx, buf, 0, make([]byte, 1024)))
		require.NoError(t, dev.Download(ctx, make([]byte, 1024), buf, 0))
		if dev.Info().Limits.TimestampValidBits > 0 {
			_, err = dev.NewQueryPool(8)
			require.NoError(t, err)
		}
		mid := dev.LiveObjects()
		// Close some explicitly, leave the rest to Device.Close.
		require.NoError(t, b.Close())
		require.NoError(t, rb.Close())
		require.NoError(t, rb.Close(), "idempotent")
		assert.Equal(t, mid-4, dev.LiveObjects(), "bindings (pool+set) and buffer (buffer+memory)")
		_ = cmd
		_ = p
		require.NoError(t, dev.Close())
		assert.Equal(t, 0, dev.LiveObjects())
		require.NoError(t, inst.Close())
		require.NoError(t, inst.Close(), "idempotent")
		assert.Equal(t, baseline, vk.LiveObjects(), "round %d", round)
	}
}

func TestInstanceCloseClosesDevices(t *testing.T) {
	baseline := vk.LiveObjects()
	inst, err := vk.NewInstance(vk.InstanceOptions{})
	if err != nil {
		vktest.Unavailable(t, "%v", err)
	}
	devs, err := inst.Devices()
	require.NoError(t, err)
	info, err := vk.SelectDevice(devs, "")
	if err != nil {
		inst.Close()
		vktest.Unavailable(t, "%v", err)
	}
	dev, err := inst.OpenDevice(info, vk.DeviceOptions{})
	require.NoError(t, err)
	_, err = dev.NewBuffer(64, vk.Upload)
	require.NoError(t, err)
	require.NoError(t, inst.Close())
	assert.Equal(t, baseline, vk.LiveObjects())
	_, err = dev.NewBuffer(64, vk.Upload)
	assert.ErrorIs(t, err, vk.ErrClosed)
}

func TestInjectedDeviceLoss(t *testing.T) {
	inst := vktest.OpenTestInstance(t)
	devs, err := inst.Devices()
	require.NoError(t, err)
	info, err := vk.SelectDevice(devs, "")
	if err != nil {
		vktest.Unavailable(t, "%v", err)
	}
	ctx := context.Background()
	dev, err := inst.OpenDevice(info, vk.DeviceOptions{})
	require.NoError(t, err)
	a, b := spinSetup(t, dev, 10)

	// Loss at submit.
	dev.InjectFault(vk.ResultDeviceLost)
	_, err = dev.Submit(a)
	require.Error(t, err)
	assert.ErrorIs(t, err, vk.ErrDeviceLost)
	var verr *vk.Error
	require.ErrorAs(t, err, &verr)
	assert.Equal(t, vk.ResultDeviceLost, verr.Result)
	assert.True(t, dev.Lost())
	_, err = dev.Submit(b)
	assert.ErrorIs(t, err, vk.ErrDeviceLost, "stays lost")
	_, err = dev.NewBuffer(64, vk.DeviceLocal)
	assert.ErrorIs(t, err, vk.ErrDeviceLost)
	require.NoError(t, dev.Close())
	assert.Equal(t, 0, dev.LiveObjects())

	// Loss at wait, on a new device.
	dev2, err := inst.OpenDevice(info, vk.DeviceOptions{})
	require.NoError(t, err)
	defer dev2.Close()
	c, _ := spinSetup(t, dev2, 10)
	sub, err := dev2.Submit(c)
	require.NoError(t, err)
	dev2.InjectFault(vk.ResultDeviceLost)
	assert.ErrorIs(t, sub.Wait(ctx), vk.ErrDeviceLost)
	assert.ErrorIs(t, sub.Wait(ctx), vk.ErrDeviceLost)
	require.NoError(t, dev2.Close())

	// Other injected results are one-shot and not device loss.
	dev3, err := inst.OpenDevice(info, vk.DeviceOptions{})
	require.NoError(t, err)
	defer dev3.Close()
	d, _ := spinSetup(t, dev3, 10)
	dev3.InjectFault(vk.ResultOutOfDeviceMemory)
	_, err = dev3.Submit(d)
	assert.ErrorIs(t, err, vk.ErrOutOfMemory)
	assert.False(t, dev3.Lost())
	sub, err = dev3.Submit(d)
	require.NoError(t, err)
	require.NoError(t, sub.Wait(ctx))

	// And a fresh device still computes correctly.
	dev4, err := inst.OpenDevice(info, vk.DeviceOptions{})
	require.NoError(t, err)
	defer dev4.Close()
	runAdd(t, dev4, 1000, 2, 0)
}

func TestBogusLoader(t *testing.T) {
	err := vk.ProbeLoaderForTest("/nonexistent/libvulkan.so.1")
	require.Error(t, err)
	assert.ErrorIs(t, err, vk.ErrNoVulkan)
	err = vk.ProbeLoaderForTest("libc.so.6") // loads, but is no Vulkan loader
	assert.ErrorIs(t, err, vk.ErrNoVulkan)
}

// TestBogusLoaderEnv re-runs the test binary with VKZIP_VULKAN_LIB pointing
// at a missing library: the once-per-process loader must give ErrNoVulkan.
func TestBogusLoaderEnv(t *testing.T) {
	if os.Getenv("VKZIP_TEST_BOGUS_CHILD") == "1" {
		_, err := vk.NewInstance(vk.InstanceOptions{})
		if !errors.Is(err, vk.ErrNoVulkan) {
			t.Fatalf("NewInstance with bogus loader: %v, want ErrNoVulkan", err)
		}
		if err := vk.Load(); !errors.Is(err, vk.ErrNoVulkan) {
			t.Fatalf("Load: %v", err)
		}
		return
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestBogusLoaderEnv$", "-test.count=1")
	cmd.Env = append(os.Environ(), "VKZIP_TEST_BOGUS_CHILD=1", vk.EnvVulkanLib+"=/nonexistent/libvulkan-bogus.so.1")
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "child output:\n%s", out)
}

func TestBindingLimits(t *testing.T) {
	dev := vktest.OpenTestDevice(t)
	lim := dev.Info().Limits
	p := newPipeline(t, dev, vk.PipelineDesc{Name: "inc", SPIRV: incSPV, Bindings: 1, PushConstantSize: 8})

	// A buffer larger than maxStorageBufferRange is fine; binding all of it is not.
	size := uint64(lim.MaxStorageBufferRange) + 4096
	if lim.MaxMemoryAllocationSize != 0 && size > lim.MaxMemoryAllocationSize {
		t.Skipf("maxStorageBufferRange %d >= maxMemoryAllocationSize", lim.MaxStorageBufferRange)
	}
	big, err := dev.NewBuffer(size, vk.DeviceLocal)
	require.NoError(t, err)
	defer big.Close()
	_, err = dev.NewBindings(p, []vk.BufferRange{{Buf: big}})
	require.Error(t, err)
	assert.ErrorIs(t, err, vk.ErrInvalid)
	assert.Contains(t, err.Error(), "maxStorageBufferRange")

	// A sub-range within the limit works, also at an aligned offset.
	align := lim.MinStorageBufferOffsetAlignment
	b, err := dev.NewBindings(p, []vk.BufferRange{{Buf: big, Offset: 4096, Size: uint64(lim.MaxStorageBufferRange)}})
	require.NoError(t, err)
	defer b.Close()
	require.NoError(t, b.Update([]vk.BufferRange{{Buf: big, Offset: align, Size: 1024}}))
	if align > 1 {
		err = b.Update([]vk.BufferRange{{Buf: big, Offset: align / 2, Size: 1024}})
		assert.ErrorIs(t, err, vk.ErrInvalid)
		assert.Contains(t, err.Error(), "minStorageBufferOffsetAlignment")
	}
	err = b.Update([]vk.BufferRange{{Buf: big, Offset: size - 16, Size: 32}})
	assert.ErrorIs(t, err, vk.ErrInvalid)
	_, err = dev.NewBindings(p, nil)
	assert.ErrorIs(t, err, vk.ErrInvalid, "wrong range count")
}

func TestBufferKinds(t *testing.T) {
	dev := vktest.OpenTestDevice(t)
	ctx := context.Background()
	for _, k := range []vk.BufferKind{vk.DeviceLocal, vk.HostVisible, vk.Upload, vk.Readback, vk.DeviceLocalHostVisible} {
		buf, err := dev.NewBuffer(4096, k)
		if k == vk.DeviceLocalHostVisible && errors.Is(err, vk.ErrUnsupported) {
			t.Logf("%s: %v", k, err)
			continue
		}
		require.NoError(t, err, k.String())
		assert.Equal(t, uint64(4096), buf.Size())
		assert.GreaterOrEqual(t, buf.AllocationSize(), buf.Size())
		view, err := buf.Bytes()
		if k == vk.DeviceLocal {
			assert.ErrorIs(t, err, vk.ErrInvalid)
		} else {
			require.NoError(t, err)
			assert.Len(t, view, 4096)
		}
		data := []byte(strings.Repeat("vkzip!", 100))
		require.NoError(t, dev.Upload(ctx, buf, 10, data))
		got := make([]byte, len(data))
		require.NoError(t, dev.Download(ctx, got, buf, 10))
		assert.Equal(t, data, got, k.String())
		require.NoError(t, buf.Close())
		_, err = buf.Bytes()
		assert.ErrorIs(t, err, vk.ErrClosed)
	}
	_, err := dev.NewBuffer(0, vk.DeviceLocal)
	assert.ErrorIs(t, err, vk.ErrInvalid)
	if max := dev.Info().Limits.MaxMemoryAllocationSize; max != 0 {
		_, err = dev.NewBuffer(max+1, vk.DeviceLocal)
		assert.ErrorIs(t, err, vk.ErrInvalid)
		assert.Contains(t, err.Error(), "maxMemoryAllocationSize")
	}
	_, err = dev.NewBuffer(64, vk.BufferKind(99))
	assert.ErrorIs(t, err, vk.ErrInvalid)
}

func TestExternalMemoryFD(t *testing.T) {
	dev := vktest.OpenTestDevice(t)
	ctx := context.Background()
	plain, err := dev.NewBuffer(64, vk.DeviceLocal)
	require.NoError(t, err)
	_, err = plain.ExportFD()
	assert.ErrorIs(t, err, vk.ErrInvalid, "not exportable")
	if !dev.Features().ExternalMemoryFD {
		_, err := dev.NewBuffer(64, vk.DeviceLocal, vk.BufferOptions{ExportableFD: true})
		assert.ErrorIs(t, err, vk.ErrUnsupported)
		_, err = dev.ImportBufferFD(3, 64)
		assert.ErrorIs(t, err, vk.ErrUnsupported)
		t.Skip("VK_KHR_external_memory_fd not supported")
	}
	const size = 1 << 16
	src, err := dev.NewBuffer(size, vk.DeviceLocal, vk.BufferOptions{ExportableFD: true})
	require.NoError(t, err)
	data := u32s(size/4, func(i int) uint32 { return uint32(i) ^ 0x5a5a5a5a })
	require.NoError(t, dev.Upload(ctx, src, 0, data))
	fd, err := src.ExportFD()
	require.NoError(t, err)
	require.GreaterOrEqual(t, fd, 0)

	// Import into a second device on the same physical device.
	dev2, err := dev.Instance().OpenDevice(dev.Info(), vk.DeviceOptions{})
	require.NoError(t, err)
	defer dev2.Close()
	imp, err := dev2.ImportBufferFD(fd, size, vk.ImportOptions{AllocationSize: src.AllocationSize()})
	if err != nil {
		os.NewFile(uintptr(fd), "exported").Close()
		t.Fatalf("ImportBufferFD: %v", err)
	}
	got := make([]byte, size)
	require.NoError(t, dev2.Download(ctx, got, imp, 0))
	assert.Equal(t, data, got)
	require.NoError(t, imp.Close())
}

func TestPipelineCacheFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "pcache.bin")
	require.NoError(t, os.WriteFile(path, []byte("garbage from another device, ignored"), 0o644))
	dev := vktest.OpenTestDeviceWith(t, vktest.Options{Device: vk.DeviceOptions{PipelineCachePath: path}})
	_, err := dev.NewPipeline(vk.PipelineDesc{SPIRV: addSPV, Bindings: 2, PushConstantSize: 8})
	require.NoError(t, err)
	data, err := dev.PipelineCacheData()
	require.NoError(t, err)
	require.GreaterOrEqual(t, len(data), 32)
	require.NoError(t, dev.SavePipelineCache())
	saved, err := os.ReadFile(path)
	require.NoError(t, err)
	require.GreaterOrEqual(t, len(saved), 32)
	info := dev.Info()
	assert.Equal(t, info.VendorID, binary.LittleEndian.Uint32(saved[8:]))
	assert.Equal(t, info.PipelineCacheUUID[:], saved[16:32])

	// Reopening with the saved cache works.
	dev2, err := dev.Instance().OpenDevice(info, vk.DeviceOptions{PipelineCachePath: path})
	require.NoError(t, err)
	_, err = dev2.NewPipeline(vk.PipelineDesc{SPIRV: addSPV, Bindings: 2, PushConstantSize: 8})
	require.NoError(t, err)
	require.NoError(t, dev2.Close())
}

func TestClosedObjects(t *testing.T) {
	dev := vktest.OpenTestDevice(t)
	cmd, err := dev.NewCommands()
	require.NoError(t, err)
	require.NoError(t, cmd.Close())
	assert.ErrorIs(t, cmd.Begin(), vk.ErrClosed)
	_, err = dev.Submit(cmd)
	assert.ErrorIs(t, err, vk.ErrClosed)
	require.NoError(t, dev.Close())
	_, err = dev.NewCommands()
	assert.ErrorIs(t, err, vk.ErrClosed)
	require.NoError(t, dev.Close(), "idempotent")
}

// TestHotPathAllocs checks that recording and submitting a pre-built set of
// dispatches allocates nothing in Go.
func TestHotPathAllocs(t *testing.T) {
	dev := vktest.OpenTestDevice(t)
	p := newPipeline(t, dev, vk.PipelineDesc{Name: "inc", SPIRV: incSPV, Bindings: 1, PushConstantSize: 8})
	buf, err := dev.NewBuffer(4*256, vk.DeviceLocal)
	require.NoError(t, err)
	b, err := dev.NewBindings(p, []vk.BufferRange{{Buf: buf}})
	require.NoError(t, err)
	cmd, err := dev.NewCommands()
	require.NoError(t, err)
	push := push32(256, 1)
	ctx := context.Background()
	allocs := testing.AllocsPerRun(50, func() {
		if err := cmd.Begin(); err != nil {
			panic(err)
		}
		for i := 0; i < 4; i++ {
			cmd.Dispatch(p, b, push, 4, 1, 1)
			cmd.Barrier()
		}
		if err := cmd.End(); err != nil {
			panic(err)
		}
		sub, err := dev.Submit(cmd)
		if err != nil {
			panic(err)
		}
		if err := sub.Wait(ctx); err != nil {
			panic(err)
		}
	})
	assert.Zero(t, allocs, "allocations per record+submit+wait")
}

func BenchmarkRecordSubmitWait(b *testing.B) {
	dev := vktest.OpenTestDevice(b)
	p := newPipeline(b, dev, vk.PipelineDesc{Name: "inc", SPIRV: incSPV, Bindings: 1, PushConstantSize: 8})
	buf, err := dev.NewBuffer(4*256, vk.DeviceLocal)
	require.NoError(b, err)
	bind, err := dev.NewBindings(p, []vk.BufferRange{{Buf: buf}})
	require.NoError(b, err)
	cmd, err := dev.NewCommands()
	require.NoError(b, err)
	push := push32(256, 1)
	ctx := context.Background()
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		_ = cmd.Begin()
		for k := 0; k < 4; k++ {
			cmd.Dispatch(p, bind, push, 4, 1, 1)
			cmd.Barrier()
		}
		_ = cmd.End()
		sub, err := dev.Submit(cmd)
		if err != nil {
			b.Fatal(err)
		}
		if err := sub.Wait(ctx); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkResubmitWait(b *testing.B) {
	dev := vktest.OpenTestDevice(b)
	p := newPipeline(b, dev, vk.PipelineDesc{Name: "inc", SPIRV: incSPV, Bindings: 1, PushConstantSize: 8})
	buf, err := dev.NewBuffer(4*256, vk.DeviceLocal)
	require.NoError(b, err)
	bind, err := dev.NewBindings(p, []vk.BufferRange{{Buf: buf}})
	require.NoError(b, err)
	cmd, err := dev.NewCommands()
	require.NoError(b, err)
	require.NoError(b, cmd.Begin())
	cmd.Dispatch(p, bind, push32(256, 1), 4, 1, 1)
	require.NoError(b, cmd.End())
	ctx := context.Background()
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		sub, err := dev.Submit(cmd)
		if err != nil {
			b.Fatal(err)
		}
		if err := sub.Wait(ctx); err != nil {
			b.Fatal(err)
		}
	}
}

func TestTimelineSemaphores(t *testing.T) {
	dev := vktest.OpenTestDevice(t)
	ctx := context.Background()
	if !dev.Features().TimelineSemaphore {
		_, err := dev.NewTimelineSemaphore(0)
		assert.ErrorIs(t, err, vk.ErrUnsupported)
		t.Skip("no timeline semaphores")
	}
	gate, err := dev.NewTimelineSemaphore(0)
	require.NoError(t, err)
	done, err := dev.NewTimelineSemaphore(10)
	require.NoError(t, err)
	v, err := done.Value()
	require.NoError(t, err)
	assert.Equal(t, uint64(10), v)

	a, _ := spinSetup(t, dev, 10)
	sub, err := dev.SubmitWith(a, []vk.SemaphoreValue{{Sem: gate, Value: 2}}, []vk.SemaphoreValue{{Sem: done, Value: 15}})
	require.NoError(t, err)
	time.Sleep(20 * time.Millisecond)
	assert.False(t, sub.Done(), "blocked on the gate semaphore")
	require.NoError(t, gate.Signal(2))
	require.NoError(t, done.Wait(ctx, 15))
	require.NoError(t, sub.Wait(ctx))
	v, err = done.Value()
	require.NoError(t, err)
	assert.Equal(t, uint64(15), v)

	short, cancel := context.WithTimeout(ctx, 5*time.Millisecond)
	defer cancel()
	assert.ErrorIs(t, done.Wait(short, 100), context.DeadlineExceeded)

	if !dev.Features().ExternalSemaphoreFD {
		_, err = dev.NewTimelineSemaphore(0, vk.SemaphoreOptions{ExportableFD: true})
		assert.ErrorIs(t, err, vk.ErrUnsupported)
	}
	_, err = gate.ExportFD()
	assert.Error(t, err)
	require.NoError(t, gate.Close())
	_, err = gate.Value()
	assert.ErrorIs(t, err, vk.ErrClosed)
}

// BenchmarkResubmitSpin polls Done instead of blocking in Wait, and
// reports how the round trip splits into vkQueueSubmit and completion.
func BenchmarkResubmitSpin(b *testing.B) {
	dev := vktest.OpenTestDevice(b)
	p := newPipeline(b, dev, vk.PipelineDesc{Name: "inc", SPIRV: incSPV, Bindings: 1, PushConstantSize: 8})
	buf, err := dev.NewBuffer(4*256, vk.DeviceLocal)
	require.NoError(b, err)
	bind, err := dev.NewBindings(p, []vk.BufferRange{{Buf: buf}})
	require.NoError(b, err)
	cmd, err := dev.NewCommands()
	require.NoError(b, err)
	require.NoError(b, cmd.Begin())
	cmd.Dispatch(p, bind, push32(256, 1), 4, 1, 1)
	require.NoError(b, cmd.End())
	var submitNs time.Duration
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		t0 := time.Now()
		sub, err := dev.Submit(cmd)
		if err != nil {
			b.Fatal(err)
		}
		submitNs += time.Since(t0)
		for !sub.Done() {
		}
	}
	b.ReportMetric(float64(submitNs.Nanoseconds())/float64(b.N), "submit-ns/op")
}

// TestManyInstances cycles instance+device creation: drivers that the
// loader would dlopen/dlclose per instance must stay loaded (NVIDIA's
// static TLS otherwise runs out after a few dozen cycles).
func TestManyInstances(t *testing.T) {
	if os.Getenv(vk.EnvValidate) == "1" {
		// With the validation layers the loader loads and unloads the layer library on every cycle, which can
		// crash inside vkCreateInstance on a loaded machine; what this test guards (the driver staying loaded) is
		// the same without them, and the package's validation-free run covers it.
		t.Skip("cycles instances without the validation layers only")
	}
	baseline := vk.LiveObjects()
	for i := 0; i < 40; i++ {
		inst, err := vk.NewInstance(vk.InstanceOptions{})
		if err != nil {
			if i == 0 {
				vktest.Unavailable(t, "%v", err)
			}
			t.Fatalf("cycle %d: %v", i, err)
		}
		devs, err := inst.Devices()
		require.NoError(t, err)
		info, err := vk.SelectDevice(devs, "")
		if err != nil {
			inst.Close()
			vktest.Unavailable(t, "%v", err)
		}
		dev, err := inst.OpenDevice(info, vk.DeviceOptions{})
		require.NoError(t, err, "cycle %d", i)
		_, err = dev.NewBuffer(4096, vk.DeviceLocal)
		require.NoError(t, err)
		require.NoError(t, inst.Close())
	}
	assert.Equal(t, baseline, vk.LiveObjects())
}

func TestPipelineStatConversion(t *testing.T) {
	for _, c := range []struct {
		format int32
		raw    uint64
		value  float64
		text   string
	}{
		{0, 0, 0, "false"},
		{0, 1, 1, "true"},
		{1, uint64(0xffffffffffffffd6), -42, "-42"}, // int64 -42
		{1, 96, 96, "96"},
		{2, 1 << 40, 1 << 40, "1099511627776"},
		{2, ^uint64(0), float64(^uint64(0)), "18446744073709551615"},
		{3, math.Float64bits(1.5), 1.5, "1.5"},
		{3, math.Float64bits(-0.25), -0.25, "-0.25"},
		{7, 0x2a, 0, "0x2a (unknown format 7)"},
	} {
		s := vk.MakePipelineStatForTest(c.format, c.raw)
		assert.Equal(t, c.value, s.Value, "format %d raw %#x", c.format, c.raw)
		assert.Equal(t, c.text, s.Text, "format %d raw %#x", c.format, c.raw)
		assert.Equal(t, "exe", s.Executable)
		assert.Equal(t, "name", s.Name)
		assert.Equal(t, "desc", s.Description)
		assert.Equal(t, "exe: name = "+c.text, s.String())
	}
}

// shaderInt64 and shaderInt16 are enabled wherever the device has them (vkzip's kernels pick variants by them);
// lavapipe has both.
func TestShaderIntFeatures(t *testing.T) {
	dev := vktest.OpenTestDevice(t)
	info, feats := dev.Info(), dev.Features()
	assert.Equal(t, info.ShaderInt64, feats.ShaderInt64)
	assert.Equal(t, info.ShaderInt16, feats.ShaderInt16)
	if strings.Contains(info.Name, "llvmpipe") {
		assert.True(t, info.ShaderInt64, "lavapipe supports shaderInt64")
		assert.True(t, info.ShaderInt16, "lavapipe supports shaderInt16")
	}
}

// TestPipelineStatisticsUnsupported covers devices without
// VK_KHR_pipeline_executable_properties (lavapipe) and the error paths
// every device shares.
func TestPipelineStatisticsUnsupported(t *testing.T) {
	dev := vktest.OpenTestDevice(t)
	info, feats := dev.Info(), dev.Features()
	assert.Equal(t, info.PipelineExecutableInfo, feats.PipelineStatistics)
	if info.PipelineExecutableInfo {
		assert.True(t, info.HasExtension("VK_KHR_pipeline_executable_properties"))
		assert.Contains(t, dev.EnabledExtensions(), "VK_KHR_pipeline_executable_properties")
	} else {
		assert.NotContains(t, dev.EnabledExtensions(), "VK_KHR_pipeline_executable_properties")
	}

	// Without CaptureStatistics there are never statistics.
	plain := newPipeline(t, dev, vk.PipelineDesc{Name: "plain", SPIRV: addSPV, Bindings: 2, PushConstantSize: 8})
	_, err := plain.Statistics()
	require.ErrorIs(t, err, vk.ErrUnsupported)
	assert.Contains(t, err.Error(), "plain")

	// CaptureStatistics is accepted everywhere; the pipeline works.
	const n, local = 1000, 64
	p := newPipeline(t, dev, vk.PipelineDesc{
		Name: "add-stats", SPIRV: addSPV, Bindings: 2, PushConstantSize: 8, CaptureStatistics: true,
		Spec: []vk.SpecConst{{ID: 0, Value: local}, {ID: 1, Value: 2}},
	})
	stats, err := p.Statistics()
	if feats.PipelineStatistics {
		require.NoError(t, err)
	} else {
		require.ErrorIs(t, err, vk.ErrUnsupported)
		assert.Contains(t, err.Error(), "VK_KHR_pipeline_executable_properties")
		assert.Empty(t, stats)
	}

	ctx := context.Background()
	buf, err := dev.NewBuffer(8*n, vk.HostVisible)
	require.NoError(t, err)
	defer buf.Close()
	require.NoError(t, dev.Upload(ctx, buf, 0, u32s(n, func(i int) uint32 { return uint32(i) })))
	b, err := dev.NewBindings(p, []vk.BufferRange{{Buf: buf, Size: 4 * n}, {Buf: buf, Offset: 4 * n}})
	require.NoError(t, err)
	defer b.Close()
	cmd, err := dev.NewCommands()
	require.NoError(t, err)
	defer cmd.Close()
	require.NoError(t, cmd.Begin())
	cmd.Dispatch(p, b, push32(n, 3), (n+local-1)/local, 1, 1)
	cmd.BarrierToHost()
	require.NoError(t, cmd.End())
	submitWait(t, dev, cmd)
	got := make([]byte, 4*n)
	require.NoError(t, dev.Download(ctx, got, buf, 4*n))
	for i := 0; i < n; i++ {
		require.Equal(t, uint32(i+5), binary.LittleEndian.Uint32(got[4*i:]), "out[%d]", i)
	}

	require.NoError(t, p.Close())
	_, err = p.Statistics()
	assert.ErrorIs(t, err, vk.ErrClosed)
	var nilPipe *vk.Pipeline
	_, err = nilPipe.Statistics()
	assert.ErrorIs(t, err, vk.ErrClosed)
}

// TestPipelineStatistics reads compiler statistics where the device has
// VK_KHR_pipeline_executable_properties (NVIDIA, RADV, ANV, recent
// lavapipe); it skips elsewhere.
func TestPipelineStatistics(t *testing.T) {
	dev := vktest.OpenTestDevice(t)
	info := dev.Info()
	if !info.HasExtension("VK_KHR_pipeline_executable_properties") {
		t.Skipf("%s (%s) lacks VK_KHR_pipeline_executable_properties", info.Name, info.DriverInfo)
	}
	if !dev.Features().PipelineStatistics {
		t.Skipf("%s reports VK_KHR_pipeline_executable_properties without the pipelineExecutableInfo feature", info.Name)
	}
	for _, desc := range []vk.PipelineDesc{
		{Name: "add", SPIRV: addSPV, Bindings: 2, PushConstantSize: 8, CaptureStatistics: true,
			Spec: []vk.SpecConst{{ID: 0, Value: 128}, {ID: 1, Value: 1}}},
		{Name: "subgroup", SPIRV: subgroupSPV, Bindings: 1, CaptureStatistics: true},
	} {
		p := newPipeline(t, dev, desc)
		stats, err := p.Statistics()
		require.NoError(t, err, desc.Name)
		require.NotEmpty(t, stats, "%s: no statistics", desc.Name)
		for _, s := range stats {
			t.Logf("%s: %s (%s)", desc.Name, s, s.Description)
			assert.NotEmpty(t, s.Name, "%s: statistic name", desc.Name)
			assert.NotEmpty(t, s.Text, "%s: %s text", desc.Name, s.Name)
		}
		// Repeated queries give the same answer.
		again, err := p.Statistics()
		require.NoError(t, err)
		assert.Equal(t, stats, again)
	}
}

// TestQueues checks the queue count the device chose and that work spread over every queue completes: on a device
// with several compute queues (the H200 has 16 in its compute family), consecutive Commands land on different
// queues; lavapipe has one.
func TestQueues(t *testing.T) {
	dev := vktest.OpenTestDevice(t)
	info := dev.Info()
	n := dev.Queues()
	require.GreaterOrEqual(t, n, 1)
	assert.Equal(t, min(4, info.ComputeQueueCount), n, "default queue count")
	t.Logf("%s: %d of %d compute queues", info.Name, n, info.ComputeQueueCount)
	ctx := context.Background()
	var subs []*vk.Submission
	for i := 0; i < n; i++ {
		a, b := spinSetup(t, dev, 100)
		for _, c := range []*vk.Commands{a, b} {
			sub, err := dev.Submit(c)
			require.NoError(t, err)
			subs = append(subs, sub)
		}
	}
	for _, s := range subs {
		require.NoError(t, s.Wait(ctx))
	}
	assert.Equal(t, int64(0), dev.Stats().InFlight)
}
