package conformance

import (
	"errors"
	"fmt"
	"os"
	"regexp"
	"runtime"
	"strconv"
	"strings"

	"github.com/vkzip/vkzip/codec"
)

// Target is one backend on one device, as checked by Run.
type Target struct {
	Backend codec.Backend
	Device  Device
}

// Device describes where a target ran, for the report. ID is unique within a report and keys its rows.
type Device struct {
	ID            string `json:"id"`
	Backend       string `json:"backend"`
	Name          string `json:"name"`
	Type          string `json:"type,omitempty"`
	Vendor        string `json:"vendor,omitempty"`
	VendorID      uint32 `json:"vendor_id,omitempty"`
	DeviceID      uint32 `json:"device_id,omitempty"`
	Driver        string `json:"driver,omitempty"`
	DriverInfo    string `json:"driver_info,omitempty"`
	DriverVersion string `json:"driver_version,omitempty"`
	APIVersion    string `json:"api_version,omitempty"`
	SubgroupSize  uint32 `json:"subgroup_size,omitempty"`
	// LPVectorWidth is lavapipe's vector width in bits (LP_NATIVE_VECTOR_WIDTH, read once per process), 0 for
	// other devices.
	LPVectorWidth int    `json:"lp_native_vector_width,omitempty"`
	Description   string `json:"description"` // the backend's own one-line description
}

// Unavailable is a backend or device that exists, or was asked for, but could not be checked, and why. Every
// one makes the verdict incomplete: a device the loader lists as not usable (missing features), a usable device
// that could not be opened, and no Vulkan device at all when Vulkan was to be checked.
type Unavailable struct {
	Backend string `json:"backend"`
	ID      string `json:"id,omitempty"`     // "vulkan:N" for a listed device; "" when no device was found
	Device  string `json:"device,omitempty"` // the device's name
	Reason  string `json:"reason"`
}

// CPUTarget is the Go reference backend as a target.
func CPUTarget() Target {
	b := codec.NewCPUBackend(0)
	return Target{Backend: b, Device: Device{ID: "cpu", Backend: "cpu", Name: "Go reference",
		Type: runtime.GOARCH + " cpu", Description: b.Device()}}
}

// IsLavapipe reports whether a Vulkan device is Mesa's lavapipe (llvmpipe), whose vector width is a per-process
// setting.
func IsLavapipe(d DeviceInfo) bool {
	return d.DriverID == 13 /* VK_DRIVER_ID_MESA_LLVMPIPE */ || strings.Contains(strings.ToLower(d.DriverName), "llvmpipe") ||
		strings.HasPrefix(strings.ToLower(d.Name), "llvmpipe")
}

var lpBits = regexp.MustCompile(`(\d+) bits\)`)

// lavapipeWidth is the vector width lavapipe runs with: its device name says it ("llvmpipe (LLVM 15.0.6, 256
// bits)"); else $LP_NATIVE_VECTOR_WIDTH.
func lavapipeWidth(d DeviceInfo) int {
	if m := lpBits.FindStringSubmatch(d.Name); m != nil {
		if n, err := strconv.Atoi(m[1]); err == nil {
			return n
		}
	}
	n, _ := strconv.Atoi(os.Getenv("LP_NATIVE_VECTOR_WIDTH"))
	return n
}

// VulkanDevice describes a Vulkan device for a report.
func VulkanDevice(d DeviceInfo, desc string) Device {
	dev := Device{ID: fmt.Sprintf("vulkan:%d", d.Index), Backend: "vulkan", Name: d.Name, Type: d.Type,
		Vendor: d.VendorName, VendorID: d.VendorID, DeviceID: d.DeviceID, Driver: d.DriverName, DriverInfo: d.DriverInfo,
		DriverVersion: d.DriverVersion, APIVersion: d.APIVersion, SubgroupSize: d.SubgroupSize, Description: desc}
	if IsLavapipe(d) {
		dev.LPVectorWidth = lavapipeWidth(d)
		dev.ID += fmt.Sprintf("@lp%d", dev.LPVectorWidth)
	}
	return dev
}

// Selection says which targets OpenTargets opens.
type Selection struct {
	Backend string // "all" or "" (every backend), "cpu", "vulkan"
	Device  string // Vulkan device: index or name substring; "" = every device
	// SkipLavapipe leaves lavapipe devices out (a caller that runs them in child processes, one per vector width).
	SkipLavapipe bool
	// NoResident leaves out the vulkan-resident targets (the device-resident operations of each Vulkan device).
	NoResident bool
	// Lister finds and opens the Vulkan devices (conformance/vkdevices.Lister: the Vulkan loader); nil finds none.
	Lister DeviceLister
}

// OpenTargets opens the selected backends: the CPU reference and/or every Vulkan device (or the one selected).
// Every device the lister reports that could not be opened or is not usable, and the absence of any Vulkan
// device when the backend is "all", are returned as Unavailable, which makes a report's verdict incomplete. A
// device named explicitly (Device) that cannot be found or opened, and no Vulkan device with backend "vulkan",
// are errors. Close the targets' backends when done.
func OpenTargets(sel Selection) ([]Target, []Unavailable, error) {
	var ts []Target
	var un []Unavailable
	switch sel.Backend {
	case "", "all", "cpu", "vulkan":
	default:
		return nil, nil, fmt.Errorf("unknown backend %q (all, cpu, vulkan)", sel.Backend)
	}
	if sel.Backend != "vulkan" {
		ts = append(ts, CPUTarget())
	}
	if sel.Backend == "cpu" {
		return ts, nil, nil
	}
	l := lister(sel)
	devs, err := l.Devices()
	if err == nil && len(devs) == 0 {
		err = ErrNoDevice
	}
	if err != nil {
		if sel.Backend == "vulkan" || sel.Device != "" {
			return ts, nil, fmt.Errorf("vulkan: %w", err)
		}
		return ts, append(un, Unavailable{Backend: "vulkan", Reason: "no Vulkan device found: " + oneLine(err.Error())}), nil
	}
	var pick []DeviceInfo
	if sel.Device != "" {
		d, err := l.Select(devs, sel.Device)
		if err != nil {
			closeTargets(ts)
			return nil, nil, fmt.Errorf("vulkan: %w", err)
		}
		pick = []DeviceInfo{d}
	} else {
		for _, d := range devs {
			if !d.Usable {
				un = append(un, Unavailable{Backend: "vulkan", ID: fmt.Sprintf("vulkan:%d", d.Index), Device: d.Name,
					Reason: "not usable: " + oneLine(d.Reason)})
				continue
			}
			pick = append(pick, d)
		}
	}
	for _, d := range pick {
		if sel.SkipLavapipe && IsLavapipe(d) {
			continue
		}
		opened, err := l.Open(d, !sel.NoResident)
		if err != nil {
			if sel.Device != "" {
				closeTargets(ts)
				return nil, nil, fmt.Errorf("vulkan device %d (%s): %w", d.Index, d.Name, err)
			}
			un = append(un, Unavailable{Backend: "vulkan", ID: fmt.Sprintf("vulkan:%d", d.Index), Device: d.Name,
				Reason: "could not be opened: " + oneLine(err.Error())})
			continue
		}
		ts = append(ts, opened...)
	}
	return ts, un, nil
}

func closeTargets(ts []Target) error {
	var errs []error
	for _, t := range ts {
		errs = append(errs, t.Backend.Close())
	}
	return errors.Join(errs...)
}

// CloseTargets closes the targets' backends.
func CloseTargets(ts []Target) error { return closeTargets(ts) }

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }
