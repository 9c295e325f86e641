package vktest

import (
	_ "embed"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vkzip/vkzip/vk"
)

// incSPV is a copy of ../testdata/inc.spv (go:embed cannot reach parent
// directories): a shader with a push-constant block and one binding.
//
//go:embed testdata/inc.spv
var incSPV []byte

// recTB records failures and cleanups instead of acting on them.
type recTB struct {
	testing.TB
	errors   []string
	fatal    bool
	skipped  bool
	cleanups []func()
}

func (r *recTB) Helper() {}
func (r *recTB) Errorf(format string, args ...any) {
	r.errors = append(r.errors, fmt.Sprintf(format, args...))
}
func (r *recTB) Fatalf(format string, args ...any) {
	r.Errorf(format, args...)
	r.fatal = true
	panic(r)
}
func (r *recTB) Skipf(format string, args ...any) {
	r.skipped = true
	panic(r)
}
func (r *recTB) Cleanup(f func()) { r.cleanups = append(r.cleanups, f) }
func (r *recTB) runCleanups() {
	for i := len(r.cleanups) - 1; i >= 0; i-- {
		r.cleanups[i]()
	}
}

// run calls f, absorbing the panics recTB uses to stop like Fatal/Skip do.
func (r *recTB) run(f func()) {
	defer func() {
		if v := recover(); v != nil && v != r {
			panic(v)
		}
	}()
	f()
}

func TestUnavailableSkipsOrFails(t *testing.T) {
	t.Setenv(EnvRequire, "")
	r := &recTB{TB: t}
	r.run(func() { Unavailable(r, "no device") })
	assert.True(t, r.skipped)
	assert.Empty(t, r.errors)

	t.Setenv(EnvRequire, "1")
	r = &recTB{TB: t}
	r.run(func() { Unavailable(r, "no device") })
	assert.False(t, r.skipped)
	assert.True(t, r.fatal)
	require.Len(t, r.errors, 1)
	assert.Contains(t, r.errors[0], EnvRequire)
}

func TestValidationMessagesFailTest(t *testing.T) {
	r := &recTB{TB: t}
	var dev *vk.Device
	r.run(func() {
		dev = OpenTestDeviceWith(r, Options{Instance: vk.InstanceOptions{Validation: true}})
	})
	if r.skipped {
		t.Skip("no Vulkan device")
	}
	require.NotNil(t, dev, "errors: %v", r.errors)
	if !dev.Instance().ValidationEnabled() {
		r.runCleanups()
		t.Skip("validation layer not installed")
	}
	// Invalid on purpose: the shader's push-constant block is not in the
	// layout. The driver compiles it anyway; the pipeline is never run.
	_, err := dev.NewPipeline(vk.PipelineDesc{SPIRV: incSPV, Bindings: 1, PushConstantSize: 0})
	require.NoError(t, err)
	require.Greater(t, dev.Instance().ValidationMessageCount(), 0)
	t.Logf("provoked: %s", dev.Instance().ValidationMessages()[0])
	r.runCleanups()
	require.NotEmpty(t, r.errors, "cleanup must report validation messages")
	assert.Contains(t, r.errors[len(r.errors)-1], "validation messages")
	assert.Equal(t, 0, dev.LiveObjects(), "cleanup closed the device")
}
