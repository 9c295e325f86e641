package main

import (
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"
)

// progressMin is the input size from which encode and decode show a progress bar (on a terminal only).
const progressMin = 64 << 20

// progress is a one-line progress bar on stderr. A nil *progress does nothing, so callers need no checks.
type progress struct {
	w     io.Writer
	label string
	total int64

	mu    sync.Mutex
	done  int64
	start time.Time
	drawn time.Time
}

// newProgress returns a bar for total bytes, or nil when none should be shown: small inputs, --quiet, or a stderr
// that is not a terminal (a bar would only litter logs).
func newProgress(label string, total int64, quiet bool) *progress {
	if quiet || total <= progressMin || !isTerminal(os.Stderr) {
		return nil
	}
	return &progress{w: os.Stderr, label: label, total: total, start: time.Now()}
}

// add counts n more bytes as processed; it redraws at most ten times a second.
func (p *progress) add(n int64) {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.done = min(p.done+n, p.total)
	if now := time.Now(); now.Sub(p.drawn) >= 100*time.Millisecond {
		p.drawn = now
		fmt.Fprint(p.w, "\r"+p.line(now))
	}
}

// finish draws the bar full and ends its line.
func (p *progress) finish() {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.done = p.total
	fmt.Fprint(p.w, "\r"+p.line(time.Now())+"\n")
}

// abort erases the bar, so that the error line that follows starts on a clean line.
func (p *progress) abort() {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	fmt.Fprint(p.w, "\r\033[K")
}

func (p *progress) line(now time.Time) string {
	const width = 30
	frac := 1.0
	if p.total > 0 {
		frac = float64(p.done) / float64(p.total)
	}
	fill := int(frac * width)
	rate := 0.0
	if s := now.Sub(p.start).Seconds(); s > 0 {
		rate = float64(p.done) / 1e6 / s
	}
	return fmt.Sprintf("%s [%s%s] %3.0f%% %.1f/%.1f MB %.1f MB/s", p.label, strings.Repeat("#", fill),
		strings.Repeat(".", width-fill), 100*frac, float64(p.done)/1e6, float64(p.total)/1e6, rate)
}
