// Package gpulink moves a KV tensor from one GPU to another GPU of the same host over NCCL, raw or compressed
// with vkzip's Vulkan codec on the way, and measures both.
//
// Raw: one NCCL group sends the tensor's BF16 bytes from GPU 0 and receives them on GPU 1.
//
// Compressed: the tensor is cut into chunks. For chunk k, the Vulkan encoder on GPU 0 writes a SplitZip-4 body into
// one of S body buffers ("slots"); NCCL sends the body to the matching slot on GPU 1; the Vulkan decoder there
// writes the chunk's values into the output tensor. Every buffer the two APIs share is Vulkan memory exported as an
// fd and imported into CUDA (cudabridge.SharedBuffer), so nothing is copied between them, and the hand-offs are
// timeline semaphores shared by both APIs (cudabridge.SharedSemaphore): encoded and sent on GPU 0, received and
// decoded on GPU 1. S chunks are in flight: while chunk k travels, later chunks are being encoded and earlier ones
// decoded, and device memory beyond the tensors is S bodies per GPU, whatever the tensor's size. runPipeline (in
// schedule.go) is the schedule; the tests run it against a simulation of the two GPUs.
//
// Both transfers run in one process that drives both GPUs (ncclCommInitAll): the host learns each body's length
// when its encode finishes and posts the matching receive with it. Between two processes the length would travel
// first as a small message.
//
// What limits the compressed transfer: a GPU runs the work of one context at a time (time-slicing, without MPS),
// and Vulkan and CUDA are separate contexts, so on each GPU the codec's kernels and NCCL's copy kernels take turns
// rather than overlap — the pipeline overlaps work across the two GPUs and the link, not within one GPU. NCCL's
// P2P transport copies with SM kernels by default; NCCL_P2P_USE_CUDA_MEMCPY=1 makes it use the copy engines, which
// may run beside the other context's kernels.
//
// Failures: ErrNeedTwoGPUs, and cudabridge.ErrNoCUDA / nccl.ErrNoNCCL (both when both are missing) from Bench and
// Check; a body that does not decode keeps the codec's error class (codec.ErrChecksum, ...); a transfer whose output
// differs from its input is ErrMismatch.
package gpulink
