//go:build !cgo

package vk

// Stub build without cgo: the API is identical, NewInstance fails with
// ErrNoVulkan, and no object can be created.

import (
	"context"
	"fmt"
)

var errNoCgo = fmt.Errorf("%w: built without cgo", ErrNoVulkan)

// DefaultLoaderPath is the library opened unless VKZIP_VULKAN_LIB is set.
const DefaultLoaderPath = "libvulkan.so.1"

// LiveObjects returns the number of live Vulkan objects (always 0).
func LiveObjects() int { return 0 }

// Load reports that Vulkan is unavailable in this build.
func Load() error { return errNoCgo }

// LoaderPath returns "" in this build.
func LoaderPath() string { return "" }

func probeLoader(path string) error { return errNoCgo }

// Instance is an empty shell in builds without cgo.
type Instance struct{}

// NewInstance fails with ErrNoVulkan in builds without cgo.
func NewInstance(opts InstanceOptions) (*Instance, error) { return nil, errNoCgo }

func (in *Instance) ValidationEnabled() bool                               { return false }
func (in *Instance) ValidationMessages() []string                          { return nil }
func (in *Instance) ValidationMessageCount() int                           { return 0 }
func (in *Instance) ValidationErrorCount() int                             { return 0 }
func (in *Instance) ResetValidationMessages()                              {}
func (in *Instance) APIVersion() string                                    { return "" }
func (in *Instance) EnabledLayers() []string                               { return nil }
func (in *Instance) EnabledExtensions() []string                           { return nil }
func (in *Instance) Close() error                                          { return nil }
func (in *Instance) Devices() ([]DeviceInfo, error)                        { return nil, nil }
func (in *Instance) OpenDevice(DeviceInfo, DeviceOptions) (*Device, error) { return nil, errNoCgo }

// Device is an empty shell in builds without cgo.
type Device struct{}

func (d *Device) Info() DeviceInfo                   { return DeviceInfo{} }
func (d *Device) Instance() *Instance                { return nil }
func (d *Device) RobustBufferAccess() bool           { return false }
func (d *Device) Features() EnabledFeatures          { return EnabledFeatures{} }
func (d *Device) EnabledExtensions() []string        { return nil }
func (d *Device) QueueFamily() uint32                { return 0 }
func (d *Device) Queues() int                        { return 0 }
func (d *Device) LiveObjects() int                   { return 0 }
func (d *Device) Stats() Stats                       { return Stats{} }
func (d *Device) CountReadback(bytes uint64)         {}
func (d *Device) InjectFault(r Result)               {}
func (d *Device) Lost() bool                         { return false }
func (d *Device) WaitIdle() error                    { return errNoCgo }
func (d *Device) Close() error                       { return nil }
func (d *Device) PipelineCacheData() ([]byte, error) { return nil, errNoCgo }
func (d *Device) SavePipelineCache() error           { return errNoCgo }
func (d *Device) String() string                     { return "vk.Device(no cgo)" }
func (d *Device) NewBuffer(uint64, BufferKind, ...BufferOptions) (*Buffer, error) {
	return nil, errNoCgo
}
func (d *Device) ImportBufferFD(int, uint64, ...ImportOptions) (*Buffer, error) { return nil, errNoCgo }
func (d *Device) Upload(context.Context, *Buffer, uint64, []byte) error         { return errNoCgo }
func (d *Device) Download(context.Context, []byte, *Buffer, uint64) error       { return errNoCgo }
func (d *Device) UploadPieces(context.Context, *Buffer, []Piece) error          { return errNoCgo }
func (d *Device) StartFetch(*Buffer, []Piece) (*Fetch, error)                   { return nil, errNoCgo }
func (d *Device) NewPipeline(PipelineDesc) (*Pipeline, error)                   { return nil, errNoCgo }
func (d *Device) NewBindings(*Pipeline, []BufferRange) (*Bindings, error)       { return nil, errNoCgo }
func (d *Device) NewCommands() (*Commands, error)                               { return nil, errNoCgo }
func (d *Device) Submit(*Commands) (*Submission, error)                         { return nil, errNoCgo }
func (d *Device) SubmitWith(*Commands, []SemaphoreValue, []SemaphoreValue) (*Submission, error) {
	return nil, errNoCgo
}
func (d *Device) NewQueryPool(uint32) (*QueryPool, error) { return nil, errNoCgo }
func (d *Device) NewTimelineSemaphore(uint64, ...SemaphoreOptions) (*Semaphore, error) {
	return nil, errNoCgo
}

// Buffer is an empty shell in builds without cgo.
type Buffer struct{}

func (b *Buffer) Size() uint64           { return 0 }
func (b *Buffer) AllocationSize() uint64 { return 0 }
func (b *Buffer) Kind() BufferKind       { return DeviceLocal }
func (b *Buffer) Device() *Device        { return nil }
func (b *Buffer) Bytes() ([]byte, error) { return nil, errNoCgo }
func (b *Buffer) ExportFD() (int, error) { return -1, errNoCgo }
func (b *Buffer) Close() error           { return nil }

// Pipeline is an empty shell in builds without cgo.
type Pipeline struct{}

func (p *Pipeline) Bindings() int            { return 0 }
func (p *Pipeline) PushConstantSize() uint32 { return 0 }
func (p *Pipeline) SubgroupSize() uint32     { return 0 }
func (p *Pipeline) Name() string             { return "" }
func (p *Pipeline) Close() error             { return nil }

// Statistics fails with an error matching both ErrNoVulkan and ErrUnsupported.
func (p *Pipeline) Statistics() ([]PipelineStat, error) {
	return nil, fmt.Errorf("%w: %w", ErrUnsupported, errNoCgo)
}

// Bindings is an empty shell in builds without cgo.
type Bindings struct{}

func (b *Bindings) Update([]BufferRange) error { return errNoCgo }
func (b *Bindings) Ranges() []BufferRange      { return nil }
func (b *Bindings) Close() error               { return nil }

// Commands is an empty shell in builds without cgo.
type Commands struct{}

func (c *Commands) Begin() error                                                            { return errNoCgo }
func (c *Commands) Dispatch(p *Pipeline, b *Bindings, push []byte, x, y, z uint32)          {}
func (c *Commands) Barrier()                                                                {}
func (c *Commands) BarrierToHost()                                                          {}
func (c *Commands) rawBarrier(srcStage, dstStage, srcAccess, dstAccess uint32)              {}
func (c *Commands) FillBuffer(b *Buffer, off, size uint64, value uint32)                    {}
func (c *Commands) CopyBuffer(dst *Buffer, dstOff uint64, src *Buffer, srcOff, size uint64) {}
func (c *Commands) ResetQueries(qp *QueryPool, first, count uint32)                         {}
func (c *Commands) Timestamp(qp *QueryPool, index uint32)                                   {}
func (c *Commands) End() error                                                              { return errNoCgo }
func (c *Commands) Err() error                                                              { return errNoCgo }
func (c *Commands) Pending() bool                                                           { return false }
func (c *Commands) Close() error                                                            { return nil }

// Submission is an empty shell in builds without cgo.
type Submission struct{}

func (s *Submission) Done() bool                     { return true }
func (s *Submission) Wait(ctx context.Context) error { return errNoCgo }

// QueryPool is an empty shell in builds without cgo.
type QueryPool struct{}

func (q *QueryPool) Count() uint32                               { return 0 }
func (q *QueryPool) Ticks(first, count uint32) ([]uint64, error) { return nil, errNoCgo }
func (q *QueryPool) Nanos(first, count uint32) ([]uint64, error) { return nil, errNoCgo }
func (q *QueryPool) TicksInto(dst []uint64, first uint32) error  { return errNoCgo }
func (q *QueryPool) Reset(first, count uint32) error             { return errNoCgo }
func (q *QueryPool) NanosInto(dst []uint64, first uint32) error  { return errNoCgo }
func (q *QueryPool) Close() error                                { return nil }

// Semaphore is an empty shell in builds without cgo.
type Semaphore struct{}

func (s *Semaphore) Value() (uint64, error)                   { return 0, errNoCgo }
func (s *Semaphore) Signal(v uint64) error                    { return errNoCgo }
func (s *Semaphore) Wait(ctx context.Context, v uint64) error { return errNoCgo }
func (s *Semaphore) ExportFD() (int, error)                   { return -1, errNoCgo }
func (s *Semaphore) Close() error                             { return nil }

// A Fetch is a staged download in flight (cgo builds only).
type Fetch struct{}

func (f *Fetch) Wait(context.Context) error { return errNoCgo }
