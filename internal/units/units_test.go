package units

import "testing"

func TestParseSize(t *testing.T) {
	good := map[string]int64{"512MiB": 512 << 20, "1GiB": 1 << 30, "64MB": 64e6, "1000000": 1e6, "3KiB": 3 << 10,
		"1.5GB": 15e8, "7B": 7, "2KB": 2000}
	for s, want := range good {
		if got, err := ParseSize(s); err != nil || got != want {
			t.Errorf("ParseSize(%q) = %d, %v; want %d", s, got, err, want)
		}
	}
	for _, s := range []string{"", "0", "-1", "MiB", "x1MiB", "1TiB", "0MiB", "-2GB", "1e30GB", "12 MiB"} {
		if got, err := ParseSize(s); err == nil {
			t.Errorf("ParseSize(%q) = %d, want an error", s, got)
		}
	}
}
