// Package cudavk joins the CUDA bridge (package cudabridge) to the Vulkan
// codec (package vkcodec): the bridge benchmark behind `vkzip bench
// --source cuda|copy|host` and the self-test server behind
// examples/cudaserve and examples/cuda_client.py. cudabridge itself knows
// the codec only through the EncodeOp/DecodeOp interfaces it declares;
// this package supplies vkcodec's prepared operations to it.
package cudavk

import (
	"fmt"

	"github.com/vkzip/vkzip/codec/vkcodec"
	"github.com/vkzip/vkzip/cudabridge"
)

// GPUOrdering reports whether vkcodec's prepared operations are ordered on
// the GPU by cudabridge.StartEncode/StartDecode in this build.
func GPUOrdering() bool {
	return cudabridge.GPUOrdered((*vkcodec.EncodeOp)(nil), (*vkcodec.DecodeOp)(nil))
}

// invalidf is an error of class cudabridge.ErrInvalid.
func invalidf(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{cudabridge.ErrInvalid}, args...)...)
}

// protocolf is an error of class cudabridge.ErrProtocol.
func protocolf(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{cudabridge.ErrProtocol}, args...)...)
}
