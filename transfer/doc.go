// Package transfer moves a byte stream (a KV cache, as little-endian BF16) from one process to another, raw or
// compressed with vkzip on the way, in a pipeline that overlaps encoding, transport and decoding.
//
// The sending end (Send) reads the stream in chunks (Options.ChunkSize, 4 MiB by default), encodes each chunk into
// one codec container on Options.Workers goroutines and sends the chunks in order; the receiving end (Receive)
// decodes them on its own workers and writes them in order. Each end holds a fixed pool of InFlight chunk
// buffers: a chunk's buffer goes back to the pool only once it is sent (or written), so a slow link or a slow
// writer stops the reading, and memory does not depend on the stream's length. The sender hashes what it read,
// the receiver what it wrote; the receiver reports its verdict and both ends fail on a mismatch
// (ErrHashMismatch).
//
// The ends speak a small versioned protocol (see protocol.go: hello with version, mode, chunk size and codebook;
// data frames with sequence number, raw length and payload length; an end frame with the hash and total length;
// the receiver's result) over a Transport, which carries whole messages. ConnTransport is the TCP one (any
// net.Conn); Dial and Accept make one. Another host link is a new Transport: see its documentation. Tensors that
// live in GPU memory travel between two GPUs without this package: transfer/gpulink (NCCL, Vulkan codec).
//
//	// receiving end
//	l, _ := net.Listen("tcp", ":7468")
//	t, _ := transfer.Accept(ctx, l)
//	st, err := transfer.Receive(ctx, t, w, transfer.ReceiveOptions{})
//
//	// sending end
//	t, _ := transfer.Dial(ctx, "host:7468", 10*time.Second)
//	st, err := transfer.Send(ctx, t, r, transfer.Options{Mode: transfer.Compressed, Codebook: &cb})
//
// Failures are *Error values of one class (ErrProtocol, ErrVersion, ErrHashMismatch, ErrPayload, ErrTooLarge,
// ErrConnection, ErrFailed); a failure one end reports to the other also matches ErrRemote at the other end.
// Errors of the caller's reader or writer come back wrapped (errors.Is finds them), a context's end as ctx.Err().
package transfer
