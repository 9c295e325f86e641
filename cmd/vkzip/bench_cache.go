package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/vkzip/vkzip/vk"
)

// gpuCaches is the last-level cache (L2) of the GPUs whose size the bench knows, by PCI device id (NVIDIA,
// vendor 0x10DE) or by a word of the device's name. H200 is the GH100 die of H100 SXM with the same 50 MiB of L2.
var gpuCaches = []struct {
	name  string // a word of the device name
	ids   []uint32
	bytes int64
}{
	{"H100", []uint32{0x2330, 0x2331}, 50 << 20},
	{"H200", []uint32{0x2335}, 50 << 20},
	{"A100", []uint32{0x20B0, 0x20B2, 0x20B5, 0x20F1}, 40 << 20},
}

const pciNVIDIA = 0x10DE

// deviceLLC is the last-level cache of a Vulkan device: the table's L2 for known GPUs, the host's L3 for a CPU
// device (lavapipe), 0 and a reason where unknown.
func deviceLLC(info vk.DeviceInfo) (int64, string) {
	words := strings.FieldsFunc(info.Name, func(r rune) bool { return r == ' ' || r == '-' || r == '_' })
	for _, g := range gpuCaches {
		for _, id := range g.ids {
			if info.VendorID == pciNVIDIA && info.DeviceID == id {
				return g.bytes, fmt.Sprintf("%s L2 (PCI id %04x:%04x)", g.name, info.VendorID, info.DeviceID)
			}
		}
		for _, w := range words {
			if strings.EqualFold(w, g.name) {
				return g.bytes, fmt.Sprintf("%s L2 (by name)", g.name)
			}
		}
	}
	if info.Type == vk.DeviceTypeCPU {
		return hostL3()
	}
	return 0, fmt.Sprintf("unknown for %s (PCI id %04x:%04x)", info.Name, info.VendorID, info.DeviceID)
}

// sysCacheDir is where Linux describes CPU 0's caches.
var sysCacheDir = "/sys/devices/system/cpu/cpu0/cache"

// hostL3 is the largest level-3 cache of CPU 0 as Linux reports it, or 0 and "unknown" where it does not.
func hostL3() (int64, string) {
	dirs, _ := filepath.Glob(filepath.Join(sysCacheDir, "index*"))
	var best int64
	for _, d := range dirs {
		lvl, err1 := os.ReadFile(filepath.Join(d, "level"))
		sz, err2 := os.ReadFile(filepath.Join(d, "size"))
		if err1 != nil || err2 != nil || strings.TrimSpace(string(lvl)) != "3" {
			continue
		}
		if n := parseCacheSize(strings.TrimSpace(string(sz))); n > best {
			best = n
		}
	}
	if best == 0 {
		return 0, "unknown (the host's L3 is not in " + sysCacheDir + ")"
	}
	return best, "host L3 (" + sysCacheDir + ")"
}

// parseCacheSize reads sysfs cache sizes: "32768K", "32M", or bytes.
func parseCacheSize(s string) int64 {
	m := int64(1)
	switch {
	case strings.HasSuffix(s, "K"):
		m, s = 1<<10, strings.TrimSuffix(s, "K")
	case strings.HasSuffix(s, "M"):
		m, s = 1<<20, strings.TrimSuffix(s, "M")
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < 0 {
		return 0
	}
	return n * m
}

// setCache records the cache the working set (input + body + output bytes) meets, and a warning where it fits in
// it (the decode may then read a body still cached from the encode, whatever the copy between them evicts) or where
// the cache's size is unknown.
func setCache(out *benchOut, llc int64, what string, workingSet int64) {
	out.LLCBytes, out.LLC, out.WorkingSetBytes = llc, what, workingSet
	mib := func(n int64) string { return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20)) }
	switch {
	case llc == 0:
		out.CacheWarning = fmt.Sprintf("the last-level cache size is %s: cannot tell whether the working set "+
			"(input + body + output, %s) fits in it", what, mib(workingSet))
	case workingSet <= llc:
		out.CacheWarning = fmt.Sprintf("the working set (input + body + output, %s) fits in the last-level cache "+
			"(%s, %s): rates are cache rates, not memory rates; use a --size of several times the cache",
			mib(workingSet), mib(llc), what)
	}
}
