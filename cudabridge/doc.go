// Package cudabridge lets vkzip encode and decode KV-cache tensors that
// live in CUDA memory, in place, on NVIDIA GPUs — with no CUDA toolkit at
// build time. docs/CUDA.md is the user-facing description.
//
// # Loading
//
// libcuda.so.1 (or $VKZIP_CUDA_LIB) is dlopened at run time by a small cgo
// layer (cub.h) that declares the few driver types and structs it passes
// itself, with their layouts checked by static assertions. Nothing links
// against CUDA; without a driver (or in a build without cgo, or off Linux)
// Load returns an error wrapping ErrNoCUDA. Every failed driver call is an
// *Error naming the entry point and its CUresult.
//
// # Sharing memory
//
// Only shareable memory crosses between the APIs:
//
//   - direction a: Vulkan memory allocated exportable (a dedicated
//     allocation, VK_KHR_external_memory_fd) and imported into CUDA
//     (cuImportExternalMemory with CUDA_EXTERNAL_MEMORY_DEDICATED,
//     cuExternalMemoryGetMappedBuffer): NewSharedBuffer, ShareVulkanBuffer.
//   - direction b: CUDA VMM allocations made with POSIX fd handles
//     (cuMemCreate, cuMemExportToShareableHandle) imported into Vulkan:
//     Context.AllocShareable, ImportVMMToVulkan.
//
// Ordinary cudaMalloc memory (PyTorch's caching allocator) cannot be
// imported; Context.CopyAsync is the copy path into shared memory, counted
// in Counters.DeviceCopyBytes. CUDA takes ownership of the fds it imports:
// DupFD before sharing one further.
//
// # Ordering
//
// SharedSemaphore is a Vulkan timeline semaphore exported as an fd and
// imported into CUDA: CUDA streams signal and wait on it, Vulkan
// submissions too, so CUDA work → encode → CUDA work runs with no host
// wait. StartEncode/StartDecode order a codec's prepared operations
// (EncodeOp/DecodeOp: the package reaches the codec only through these
// interfaces) by it on the GPU when the op offers SubmitWith/Finish
// (AsyncEncodeOp), and on the host otherwise (Run.Ordering says which).
//
// # Across processes
//
// SendHandshake/RecvHandshake pass fds with SCM_RIGHTS over a Unix socket,
// with a small versioned frame format (handshake.go). Package
// examples/cudavk joins the bridge to vkcodec: its ServeSelfTest is the Go
// side of examples/cuda_client.py, the H200 client test, and its Bench
// compares encode/decode straight from CUDA memory with a copy and a
// host-staged path; Counters make the difference observable.
//
// Multicast objects (cuMulticastCreate and friends) are never used.
package cudabridge
