package cudabridge

import "sync/atomic"

// Counters are process-wide byte counts of how tensor data moved. They
// make the zero-copy contract observable: on the shared-memory path
// HostStagedBytes does not move.
type Counters struct {
	// HostStagedBytes: tensor bytes (inputs, bodies, outputs) that crossed
	// host memory, each hop counted (device→host and host→device).
	HostStagedBytes uint64 `json:"host_staged_bytes"`
	// DeviceCopyBytes: bytes copied device-to-device by the copy path, for
	// memory that cannot be shared (ordinary cudaMalloc / PyTorch caching
	// allocator memory).
	DeviceCopyBytes uint64 `json:"device_copy_bytes"`
	// ZeroCopyBytes: tensor bytes the codec read or wrote in place in
	// memory shared between CUDA and Vulkan.
	ZeroCopyBytes uint64 `json:"zero_copy_bytes"`
}

var counters struct {
	hostStaged, deviceCopy, zeroCopy atomic.Uint64
}

// ReadCounters returns the current counters.
func ReadCounters() Counters {
	return Counters{
		HostStagedBytes: counters.hostStaged.Load(),
		DeviceCopyBytes: counters.deviceCopy.Load(),
		ZeroCopyBytes:   counters.zeroCopy.Load(),
	}
}

// Sub returns c - o, field by field (counters only grow).
func (c Counters) Sub(o Counters) Counters {
	return Counters{
		HostStagedBytes: c.HostStagedBytes - o.HostStagedBytes,
		DeviceCopyBytes: c.DeviceCopyBytes - o.DeviceCopyBytes,
		ZeroCopyBytes:   c.ZeroCopyBytes - o.ZeroCopyBytes,
	}
}

// CountHostStaged adds n bytes that a caller moved through host memory
// itself (e.g. a CLI's host-staged path), so the counter covers them too.
func CountHostStaged(n uint64) { counters.hostStaged.Add(n) }

// CountZeroCopy adds n bytes processed in place in shared memory.
func CountZeroCopy(n uint64) { counters.zeroCopy.Add(n) }

func countDeviceCopy(n uint64) { counters.deviceCopy.Add(n) }
