// Package units reads the byte sizes the commands take on their command lines.
package units

import (
	"fmt"
	"strconv"
	"strings"
)

// ParseSize reads a positive byte size: a number of bytes (1000000), or a number with a binary (KiB, MiB, GiB) or
// decimal (KB, MB, GB) unit or B (512MiB, 1.5GB). Fractions are truncated to whole bytes.
func ParseSize(s string) (int64, error) {
	for _, u := range []struct {
		suf string
		m   int64
	}{{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30}, {"KB", 1e3}, {"MB", 1e6}, {"GB", 1e9}, {"B", 1}} {
		if strings.HasSuffix(s, u.suf) {
			f, err := strconv.ParseFloat(strings.TrimSuffix(s, u.suf), 64)
			if err != nil || f <= 0 || f*float64(u.m) >= 1<<63 {
				return 0, fmt.Errorf("bad size %q", s)
			}
			return int64(f * float64(u.m)), nil
		}
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n <= 0 {
		return 0, fmt.Errorf("bad size %q", s)
	}
	return n, nil
}
