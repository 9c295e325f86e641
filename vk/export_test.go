package vk

// Test hooks for the external test package.

// RawBarrierForTest records an arbitrary (possibly invalid) memory barrier.
func RawBarrierForTest(c *Commands, srcStage, dstStage, srcAccess, dstAccess uint32) {
	c.rawBarrier(srcStage, dstStage, srcAccess, dstAccess)
}

// ProbeLoaderForTest opens a loader library without installing it.
func ProbeLoaderForTest(path string) error { return probeLoader(path) }

// TicksToNanosForTest exposes the timestamp conversion.
func TicksToNanosForTest(ticks uint64, period float32) uint64 { return ticksToNanos(ticks, period) }

// MakePipelineStatForTest exposes the statistic value conversion.
func MakePipelineStatForTest(format int32, raw uint64) PipelineStat {
	return makePipelineStat("exe", "name", "desc", format, raw)
}
