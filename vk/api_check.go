package vk

import "context"

// Compile-time check that the cgo and !cgo builds export the same methods:
// both must satisfy these interfaces.

type apiBindings interface {
	Close() error
	Ranges() []BufferRange
	Update(ranges []BufferRange) error
}

type apiBuffer interface {
	AllocationSize() uint64
	Bytes() ([]byte, error)
	Close() error
	Device() *Device
	ExportFD() (int, error)
	Kind() BufferKind
	Size() uint64
}

type apiCommands interface {
	Barrier()
	BarrierToHost()
	Begin() error
	Close() error
	CopyBuffer(dst *Buffer, dstOff uint64, src *Buffer, srcOff, size uint64)
	Dispatch(p *Pipeline, b *Bindings, push []byte, x, y, z uint32)
	End() error
	Err() error
	FillBuffer(b *Buffer, off, size uint64, value uint32)
	Pending() bool
	ResetQueries(qp *QueryPool, first, count uint32)
	Timestamp(qp *QueryPool, index uint32)
}

type apiDevice interface {
	Close() error
	CountReadback(bytes uint64)
	Download(ctx context.Context, dst []byte, src *Buffer, srcOff uint64) error
	EnabledExtensions() []string
	Features() EnabledFeatures
	ImportBufferFD(fd int, size uint64, opts ...ImportOptions) (*Buffer, error)
	Info() DeviceInfo
	InjectFault(r Result)
	Instance() *Instance
	LiveObjects() int
	Lost() bool
	NewBindings(p *Pipeline, ranges []BufferRange) (*Bindings, error)
	NewBuffer(size uint64, kind BufferKind, opts ...BufferOptions) (*Buffer, error)
	NewCommands() (*Commands, error)
	NewPipeline(desc PipelineDesc) (*Pipeline, error)
	NewQueryPool(n uint32) (*QueryPool, error)
	NewTimelineSemaphore(initial uint64, opts ...SemaphoreOptions) (*Semaphore, error)
	PipelineCacheData() ([]byte, error)
	QueueFamily() uint32
	Queues() int
	RobustBufferAccess() bool
	SavePipelineCache() error
	Stats() Stats
	String() string
	Submit(c *Commands) (*Submission, error)
	SubmitWith(c *Commands, waits, signals []SemaphoreValue) (*Submission, error)
	Upload(ctx context.Context, dst *Buffer, dstOff uint64, src []byte) error
	UploadPieces(ctx context.Context, dst *Buffer, pieces []Piece) error
	WaitIdle() error
}

type apiError interface {
	Error() string
	Is(target error) bool
}

type apiInstance interface {
	APIVersion() string
	Close() error
	Devices() ([]DeviceInfo, error)
	EnabledExtensions() []string
	EnabledLayers() []string
	OpenDevice(info DeviceInfo, opts DeviceOptions) (*Device, error)
	ResetValidationMessages()
	ValidationEnabled() bool
	ValidationErrorCount() int
	ValidationMessageCount() int
	ValidationMessages() []string
}

type apiPipeline interface {
	Bindings() int
	Close() error
	Name() string
	PushConstantSize() uint32
	Statistics() ([]PipelineStat, error)
	SubgroupSize() uint32
}

type apiQueryPool interface {
	Close() error
	Count() uint32
	Nanos(first, count uint32) ([]uint64, error)
	Ticks(first, count uint32) ([]uint64, error)
	NanosInto(dst []uint64, first uint32) error
	Reset(first, count uint32) error
	TicksInto(dst []uint64, first uint32) error
}

type apiSemaphore interface {
	Close() error
	ExportFD() (int, error)
	Signal(v uint64) error
	Value() (uint64, error)
	Wait(ctx context.Context, v uint64) error
}

type apiSubmission interface {
	Done() bool
	Wait(ctx context.Context) error
}

var (
	_ apiBindings   = (*Bindings)(nil)
	_ apiBuffer     = (*Buffer)(nil)
	_ apiCommands   = (*Commands)(nil)
	_ apiDevice     = (*Device)(nil)
	_ apiError      = (*Error)(nil)
	_ apiInstance   = (*Instance)(nil)
	_ apiPipeline   = (*Pipeline)(nil)
	_ apiQueryPool  = (*QueryPool)(nil)
	_ apiSemaphore  = (*Semaphore)(nil)
	_ apiSubmission = (*Submission)(nil)
)

// Package-level functions with build-specific implementations.
var (
	_ func() error                                    = Load
	_ func() string                                   = LoaderPath
	_ func() int                                      = LiveObjects
	_ func(InstanceOptions) (*Instance, error)        = NewInstance
	_ func(string) error                              = probeLoader
	_ func(*Commands, uint32, uint32, uint32, uint32) = (*Commands).rawBarrier
	_                                                 = DefaultLoaderPath
	_ context.Context
)
