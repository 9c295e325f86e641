// Package vkcodec is the Vulkan backend of vkzip: the kernels of package shaders driven through package vk, for
// host-memory jobs (Backend.Encode, Backend.Decode) and for device-resident operations (Backend.PrepareEncode,
// Backend.PrepareDecode: tensors already in device buffers, recorded once and run many times). Two prepared
// operations stand outside the format registry and go through the same sessions, pipeline cache and submission:
// PrepareCopy (copy.go, the bandwidth roofline) and PrepareExpHist (hist.go, the exponent histogram a per-encode
// codebook is calibrated from).
//
// # Design
//
// Every body format is one gpuCodec (codec.go) in its own file, registered by one line in that file's init. A
// format declares what it needs and records its kernels; nothing else:
//
//   - check: the tensors its kernels take on this device (dtype, geometry, binding limits);
//   - shape: its smallest and largest body, where the variable-length part starts and which work word holds its
//     length after an encode;
//   - deviceBytes: the device memory one tensor takes, by which batches are split under Options.MemoryBudget;
//   - encode and decode: a plan — its streams taken as views from a regions value (staging regions for host
//     memory, views of the caller's buffers for device-resident operations, device scratch either way) and its
//     passes, each recorded with recorder.dispatch.
//
// The shared driver (driver.go for host memory, ops.go for device-resident operations) does the rest for every
// format alike: sessions and their memory, staging and the copies up and down, zeroing the work words and resetting
// the status words, one barrier between passes (the tensors of a batch run each pass side by side), timestamps,
// one queue submission per batch, the bodies' lengths and the verdicts read back and mapped to the codec's error
// classes. A format's file never submits, records a barrier, uploads or downloads.
//
// Each kernel's contract is declared once, in package shaders: its bindings by name, its push-constant block as a
// Go struct matching the GLSL block member by member (written to the command buffer in place, with
// shaders.PushBytes), and its specialization constants by name with their IDs. The one pipeline cache
// (pipeline.go) is keyed by a kernelKey: the kernel's contract and the values of the constants it sets.
//
// # Adding a format
//
//  1. Register the format with package codec (its id, name, body bounds, CPU reference): the Vulkan backend codes
//     exactly the reference's bytes, and its tests compare against it.
//  2. Declare each of its kernels' contract in package shaders (contracts.go, push.go): a push struct whose fields
//     match the GLSL push block member by member, and a Kernel with its bindings in binding order and its
//     specialization constants with their IDs; regenerate contracts.glsl (go run ./shaders/gen -o shaders).
//  3. Write the kernels in shaders/NAME.comp: #define KERNEL_<NAME> and #include "contracts.glsl" for the
//     declarations (and "layout.glsl" for the format's numbers), compile them with glslc as the go:generate lines of
//     shaders/shaders.go do, add those lines and the names to shaders.Names, and name each kernel in this
//     package's contracts.go (kernel("NAME")).
//  4. Write FORMAT.go with a type implementing gpuCodec: check, shape and deviceBytes from the format's geometry
//     (the host-side checks of a body before a decode are the codec Format's CheckBody, else its BodyBounds); encode and decode take their streams from the regions (valsAt for the values, bodyAt for byte
//     ranges of the body, scratch or zeroed for device-only memory; r.work and r.status are the work and status
//     words the driver allocated) and return a plan whose passes call rec.dispatch(keyOf(kernel, wg).with(...),
//     shaders.PushBytes(&push), groups, bindings...). A decode whose status words are not statusErr's layout sets
//     plan.statusFn. An encode whose last pass leaves the body's variable-length part in a work word says where in
//     shape (a format whose bodies have a fixed length puts the whole body before sideOff: see stored.go).
//  5. Register it in FORMAT.go: func init() { register(layout.FormatID, formatCodec{}) }. Backend.Encode,
//     Backend.Decode, PrepareEncode, PrepareDecode and SupportsFormat take it from there.
//  6. Test it against the reference: host-memory jobs through Backend.Encode and Decode, and device-resident
//     operations through PrepareEncode and PrepareDecode into poisoned buffers (stored_test.go is the smallest
//     example).
//
// Optional parts: a format whose kernels have measured tuning defaults implements kernelTuner, one whose shared
// memory grows with the tuning sharedUser (codec.go). A format auto may choose per chunk also implements
// autoCandidate (auto.go): the layout of its scratch body, its
// encode into it, and its decoder over the pieces of an auto body. A format whose decoder reads the side length
// from its status block at run time implements blockDecoder, and PrepareDecode then takes Blocks for it.
package vkcodec
