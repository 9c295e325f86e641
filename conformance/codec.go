package conformance

import (
	"context"
	"errors"
	"fmt"

	"github.com/vkzip/vkzip/codec"
	"github.com/vkzip/vkzip/codec/layout"
)

// The operations a case runs on a backend, shared by the generator (on the reference) and the runner (on every
// backend), so that both do exactly the same thing.

type encoded struct {
	body, container, containerV2 []byte
	bodyErr, contErr, contV2Err  error
}

// poison fills buffers handed to a backend, so that a backend which leaves bytes unwritten is caught.
const poison = 0xA5

func poisoned(n, c int) []byte {
	b := make([]byte, n, c)
	b = b[:c]
	for i := range b {
		b[i] = poison
	}
	return b[:n]
}

func (c *Case) dtype() (layout.DType, error) {
	d, ok := layout.ParseDType(c.DType)
	if !ok {
		return 0, fmt.Errorf("case %s: dtype %q", c.ID, c.DType)
	}
	return d, nil
}

// values is the element count of the case's tensor.
func (c *Case) values() uint64 {
	n := uint64(1)
	for _, d := range c.Shape {
		n *= d
	}
	return n
}

// encodeCase encodes in at both levels on b: the body with Backend.Encode (when the case has one, or, while
// generating, when the container codes the tensor) and the container with codec.Codec.Encode, as container
// version 1 and as the default version 2. Errors of the
// operations are returned in the result; the error return is for a case that cannot be run at all.
func encodeCase(ctx context.Context, b codec.Backend, f Format, c *Case, cb *codec.Codebook, in []byte) (encoded, error) {
	var e encoded
	dt, err := c.dtype()
	if err != nil {
		return e, err
	}
	shift, err := shiftOf(c.Chunk)
	if err != nil {
		return e, err
	}
	opts := []codec.Option{codec.WithBackend(b), codec.WithFormat(f.Name), codec.WithChunkSize(c.Chunk),
		codec.WithChecksums(c.Checksums)}
	if cb != nil && !c.Calibrate {
		opts = append(opts, codec.WithCodebook(*cb))
	}
	recs := []codec.Record{{Name: c.ID, DType: dt, Shape: c.Shape, Data: in}}
	for _, v := range []struct {
		version int
		out     *[]byte
		err     *error
	}{{layout.Version1, &e.container, &e.contErr}, {layout.Version2, &e.containerV2, &e.contV2Err}} {
		cc, err := codec.New(append(opts, codec.WithContainerVersion(v.version))...)
		if err != nil {
			return e, err
		}
		*v.out, *v.err = cc.Encode(ctx, nil, recs, true)
		cc.Close()
	}
	wantBody := c.Body != nil
	if c.Body == nil && c.Container.SHA256 == "" && e.contErr == nil {
		// Generating: the case has a body when the container codes the tensor with the format.
		ct, err := codec.ParseHeader(e.container)
		if err != nil {
			return e, err
		}
		// (auto's container may pick one candidate for the whole tensor; its body is still an auto body.)
		wantBody = ct.Recs[len(ct.Recs)-1].Format != layout.FormatStored
	}
	if wantBody {
		n := c.values()
		fd, ok := codec.LookupFormat(f.ID)
		if !ok {
			return e, fmt.Errorf("case %s: format %d is not in this build", c.ID, f.ID)
		}
		dst := poisoned(0, int(fd.MaxBodyOf(n, dt, shift))+len(in)+4096)
		jobs := []codec.EncodeJob{{Format: f.ID, DType: dt, Src: in, N: n, Shift: shift, Codebook: cb,
			Checksums: c.Checksums, Dst: dst}}
		if e.bodyErr = b.Encode(ctx, jobs); e.bodyErr == nil {
			e.body = jobs[0].Out
		}
	}
	return e, nil
}

// decodeBody decodes a body with b's Decode; the error is the job's verdict or the call's failure (callFailed
// tells which).
func decodeBody(ctx context.Context, b codec.Backend, f Format, c *Case, cb *codec.Codebook, checksums bool,
	body []byte, outBytes int) ([]byte, error) {
	out, verdict, err := decodeBodyCall(ctx, b, f, c, cb, checksums, body, outBytes)
	if err != nil {
		return nil, err
	}
	return out, verdict
}

// decodeBodyCall is decodeBody with the call's own error apart from the job's verdict.
func decodeBodyCall(ctx context.Context, b codec.Backend, f Format, c *Case, cb *codec.Codebook, checksums bool,
	body []byte, outBytes int) (out []byte, verdict, callErr error) {
	if body == nil {
		return nil, nil, nil
	}
	shift, err := shiftOf(c.Chunk)
	if err != nil {
		return nil, nil, err
	}
	dt, err := c.dtype()
	if err != nil {
		return nil, nil, err
	}
	jobs := []codec.DecodeJob{{Name: c.ID, Format: f.ID, DType: dt, Body: body, N: c.values(), Shift: shift, Codebook: cb,
		Checksums: checksums, Dst: poisoned(outBytes, outBytes)}}
	if err := b.Decode(ctx, jobs); err != nil {
		return nil, nil, err
	}
	return jobs[0].Dst, jobs[0].Err, nil
}

// decodeContainer decodes a whole payload with a Codec on b.
func decodeContainer(b codec.Backend, payload []byte) ([]byte, error) {
	cc, err := codec.New(codec.WithBackend(b))
	if err != nil {
		return nil, err
	}
	defer cc.Close()
	return cc.DecodeAll(payload, nil)
}

// decodeInvalid decodes an invalid payload on b and returns the verdict; the error return is for a call that
// failed as a call (a body-level Decode that could not run), which is not a verdict.
func decodeInvalid(ctx context.Context, b codec.Backend, f Format, base *Case, iv *Invalid, payload []byte) (verdict, callErr error) {
	if iv.Level == LevelContainer {
		_, err := decodeContainer(b, payload)
		return err, nil
	}
	cb, err := caseCodebook(base.Codebook)
	if err != nil {
		return nil, err
	}
	if iv.Codebook != "" {
		if cb, err = caseCodebook(iv.Codebook); err != nil {
			return nil, err
		}
	}
	checksums := base.Checksums
	if iv.Checksums != nil {
		checksums = *iv.Checksums
	}
	dt, err := base.dtype()
	if err != nil {
		return nil, err
	}
	_, verdict, callErr = decodeBodyCall(ctx, b, f, base, cb, checksums, payload, int(base.values())*dt.Size())
	return verdict, callErr
}

// unable reports whether an operation's error means the backend cannot run the case at all (a format or size it
// does not support) rather than that it got the case wrong: such a case is skipped, never passed.
func unable(err error) bool {
	return errors.Is(err, codec.ErrUnsupported) || errors.Is(err, codec.ErrTooLarge) || errors.Is(err, codec.ErrNoDevice)
}
