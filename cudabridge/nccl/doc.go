// Package nccl loads NCCL (libnccl.so.2) at run time and offers the few calls
// vkzip's GPU-to-GPU transfer needs: communicators for several GPUs of this
// process (ncclCommInitAll), grouped point-to-point sends and receives
// (ncclGroupStart, ncclSend, ncclRecv, ncclGroupEnd), asynchronous error
// checks and teardown.
//
// Nothing links against NCCL or CUDA: a small cgo layer (cnl.h) dlopens the
// library ($VKZIP_NCCL_LIB, else libnccl.so.2) and declares the types it
// passes itself — ncclComm_t, ncclResult_t, ncclDataType_t and the 128-byte
// ncclUniqueId, with static assertions on their sizes. Without the library
// (or with a file that is not NCCL, or in a build without cgo) Load returns
// an error wrapping ErrNoNCCL. Every entry point is checked for NULL before
// it is called.
//
// Safety: before the library is opened, Load sets NCCL_NVLS_ENABLE=0,
// TORCH_SYMM_MEM_DISABLE_MULTICAST=1 and NVSHMEM_DISABLE_NVLS=1 in the
// process environment (overriding any other value; children inherit them),
// so that NCCL never creates NVLink multicast objects. No multicast function
// of the CUDA driver is ever called. It also sets NCCL_P2P_DIRECT_DISABLE=1
// unless the variable is set already: vkzip sends from memory that Vulkan
// allocated and CUDA imported, which peer GPUs of the process cannot address
// directly, so NCCL must copy through its own buffers.
//
// The streams given to Send and Recv are CUDA streams (cudabridge.Stream):
// the driver's CUstream and the runtime's cudaStream_t are the same objects,
// and NCCL, like cudabridge, works in each device's primary context.
package nccl
