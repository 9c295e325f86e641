package main

import (
	"context"
	"errors"
	"flag"
	"fmt"

	"github.com/vkzip/vkzip/codec"
	// Backends other than the Go CPU one register themselves (codec.RegisterBackend) when linked in.
	_ "github.com/vkzip/vkzip/codec/vkcodec"
)

// backendFlags are the --backend and --device flags shared by encode, decode and demo.
type backendFlags struct{ name, device string }

func addBackendFlags(fs *flag.FlagSet, def string) *backendFlags {
	b := &backendFlags{}
	fs.StringVar(&b.name, "backend", def, "backend: auto (a GPU if one works, else the CPU) or a name from 'vkzip devices'")
	fs.StringVar(&b.device, "device", "", "device selector for GPU backends (default: the backend's choice)")
	return b
}

// session is a Codec on a backend this command opened, so it can wrap the backend (progress) and must close it.
type session struct {
	c    *codec.Codec
	b    codec.Backend
	note string // how "auto" chose, for one line on stderr
}

// openSession opens the named backend and a Codec on it with opts. With p non-nil, the backend is wrapped to
// report progress.
func openSession(bf *backendFlags, p *progress, opts ...codec.Option) (*session, error) {
	b, note, err := codec.OpenBackend(bf.name, bf.device)
	if err != nil {
		return nil, fmt.Errorf("backend %s: %s", bf.name, errMessage(err))
	}
	var use codec.Backend = b
	if p != nil {
		pb := &progressBackend{Backend: b, p: p}
		use = pb
		if pe, ok := b.(codec.PlannedEncoder); ok {
			use = &plannedProgressBackend{progressBackend: pb, pe: pe}
		}
	}
	c, err := codec.New(append(opts, codec.WithBackend(use))...)
	if err != nil {
		b.Close()
		return nil, err
	}
	return &session{c: c, b: b, note: note}, nil
}

func (s *session) close() {
	s.c.Close()
	s.b.Close()
}

// flagOption is a codec option made from a flag's value.
type flagOption struct {
	flag string
	opt  codec.Option
}

// checkOptions validates codec options made from flags (chunk size, format) before any input is read or device
// opened, so that a bad value is a usage error naming its flag.
func checkOptions(opts ...flagOption) error {
	for _, o := range opts {
		c, err := codec.New(o.opt)
		if err != nil {
			msg := errMessage(err)
			var ce *codec.Error
			if errors.As(err, &ce) && ce.Detail != "" {
				msg = ce.Detail
			}
			return usagef("--%s: %s", o.flag, msg)
		}
		c.Close()
	}
	return nil
}

// progressBatch is how many input bytes progressBackend hands its backend per call: small enough for the bar to
// move, large enough to keep every core or a GPU busy.
const progressBatch = 64 << 20

// progressBackend passes jobs to a backend in batches and advances a progress bar after each.
type progressBackend struct {
	codec.Backend
	p *progress
}

func (b *progressBackend) Encode(ctx context.Context, jobs []codec.EncodeJob) error {
	return inBatches(len(jobs), func(i int) int { return len(jobs[i].Src) }, b.p, func(i, j int) error {
		return b.Backend.Encode(ctx, jobs[i:j])
	})
}

// plannedProgressBackend keeps the CPU backend's in-place encoding (codec.PlannedEncoder) visible through the
// progress wrapper.
type plannedProgressBackend struct {
	*progressBackend
	pe codec.PlannedEncoder
}

func (b *plannedProgressBackend) PlanBodies(ctx context.Context, jobs []codec.EncodeJob) ([]codec.BodyPlan, error) {
	return b.pe.PlanBodies(ctx, jobs)
}

func (b *plannedProgressBackend) EncodePlanned(ctx context.Context, jobs []codec.EncodeJob, plans []codec.BodyPlan) error {
	return inBatches(len(jobs), func(i int) int { return len(jobs[i].Src) }, b.p, func(i, j int) error {
		return b.pe.EncodePlanned(ctx, jobs[i:j], plans[i:j])
	})
}

func (b *progressBackend) Decode(ctx context.Context, jobs []codec.DecodeJob) error {
	return inBatches(len(jobs), func(i int) int { return len(jobs[i].Dst) }, b.p, func(i, j int) error {
		return b.Backend.Decode(ctx, jobs[i:j])
	})
}

// inBatches calls fn on consecutive ranges [i, j) of n jobs holding about progressBatch bytes each (size gives a
// job's bytes) and reports each range's bytes to p.
func inBatches(n int, size func(int) int, p *progress, fn func(i, j int) error) error {
	for i := 0; i < n; {
		j, bytes := i, 0
		for j < n && (j == i || bytes+size(j) <= progressBatch) {
			bytes += size(j)
			j++
		}
		if err := fn(i, j); err != nil {
			return err
		}
		p.add(int64(bytes))
		i = j
	}
	return nil
}

// backendDesc is "name (device)" for summaries.
func backendDesc(b codec.Backend) string { return fmt.Sprintf("%s (%s)", b.Name(), b.Device()) }
