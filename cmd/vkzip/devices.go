package main

import (
	"context"
	"fmt"
	"io"
	"os"

	"github.com/vkzip/vkzip/codec"
	"github.com/vkzip/vkzip/codec/vkcodec"
	"github.com/vkzip/vkzip/vk"
)

var devicesVerb = &verb{
	name:    "devices",
	args:    "[flags]",
	summary: "list the backends and devices vkzip can use",
	about: `
Lists the backends compiled into this binary, in the order --backend auto tries them, and the devices they can
run on; the names are what --backend and --device accept.`,
	examples: `  vkzip devices
  vkzip devices --json`,
	run: runDevices,
}

// vkDevice is one Vulkan physical device as `devices` reports it.
type vkDevice struct {
	Index          int    `json:"index"`
	Name           string `json:"name"`
	Type           string `json:"type"`
	Vendor         string `json:"vendor"`
	VendorID       uint32 `json:"vendor_id"`
	Driver         string `json:"driver"`
	DriverInfo     string `json:"driver_info"`
	APIVersion     string `json:"api_version"`
	SubgroupSize   uint32 `json:"subgroup_size"`
	SubgroupOps    string `json:"subgroup_ops"`
	MemoryBytes    uint64 `json:"memory_bytes"`
	MaxBufferRange uint64 `json:"max_storage_buffer_range_bytes"`
	SharedMemory   uint32 `json:"max_shared_memory_bytes"`
	ShaderInt64    bool   `json:"shader_int64"` // 64-bit integers in kernels (with shader_int16: the faster huff decoder)
	ShaderInt16    bool   `json:"shader_int16"` // 16-bit integers in kernels
	UUID           string `json:"uuid"`
	Usable         bool   `json:"usable"`
	Reason         string `json:"reason,omitempty"`
	AutoPicks      bool   `json:"auto_picks"` // --backend auto would use it (a CPU implementation never)
}

type devicesOut struct {
	Backends    []string   `json:"backends"`
	Vulkan      []vkDevice `json:"vulkan_devices"`
	VulkanError string     `json:"vulkan_error,omitempty"`
	CPU         string     `json:"cpu"`
}

func runDevices(ctx context.Context, v *verb, args []string) error {
	fs := newFlags(v)
	asJSON := fs.Bool("json", false, "print a JSON object")
	pos, err := parseArgs(v, fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 0 {
		return usagef("devices takes no arguments")
	}
	return listDevices(os.Stdout, *asJSON)
}

// listDevices writes the registered backends and the Vulkan devices to w.
func listDevices(w io.Writer, asJSON bool) error {
	out := devicesOut{Backends: codec.Backends(), CPU: codec.NewCPUBackend(0).Device()}
	devs, err := vkcodec.Devices()
	if err != nil {
		out.VulkanError = errMessage(err)
	}
	best := -1
	if sel, err := vk.SelectDevice(devs, ""); err == nil && sel.Type != vk.DeviceTypeCPU {
		best = sel.Index
	}
	for _, d := range devs {
		out.Vulkan = append(out.Vulkan, vkDevice{Index: d.Index, Name: d.Name, Type: d.Type.String(),
			Vendor: d.VendorName, VendorID: d.VendorID, Driver: d.DriverName, DriverInfo: d.DriverInfo,
			APIVersion: d.APIVersion, SubgroupSize: d.SubgroupSize, SubgroupOps: d.SubgroupOps.String(),
			MemoryBytes: d.DeviceLocalBytes, MaxBufferRange: uint64(d.Limits.MaxStorageBufferRange),
			SharedMemory: d.Limits.MaxComputeSharedMemorySize, ShaderInt64: d.ShaderInt64, ShaderInt16: d.ShaderInt16, UUID: fmt.Sprintf("%x", d.UUID),
			Usable: d.Usable, Reason: d.Reason, AutoPicks: d.Index == best})
	}
	if asJSON {
		return writeJSON(w, out)
	}
	fmt.Fprintf(w, "backends: %v (auto: a usable GPU, else the Go CPU backend)\n", out.Backends)
	fmt.Fprintf(w, "cpu: %s\n", out.CPU)
	if out.VulkanError != "" {
		fmt.Fprintf(w, "vulkan: unavailable: %s\n", out.VulkanError)
		return nil
	}
	if len(out.Vulkan) == 0 {
		fmt.Fprintln(w, "vulkan: no devices")
	}
	for _, d := range out.Vulkan {
		use := "usable"
		if !d.Usable {
			use = "NOT usable: " + d.Reason
		}
		if d.AutoPicks {
			use += ", auto picks it"
		}
		yesNo := map[bool]string{false: "no", true: "yes"}
		fmt.Fprintf(w, "vulkan device %d: %s\n  type %s, vendor %s, driver %s (%s), Vulkan %s\n  subgroup %d (%s), memory %.1f GiB, max binding %.0f MiB, int64 kernels %s, int16 kernels %s; %s\n",
			d.Index, d.Name, d.Type, d.Vendor, d.Driver, d.DriverInfo, d.APIVersion, d.SubgroupSize, d.SubgroupOps,
			float64(d.MemoryBytes)/(1<<30), float64(d.MaxBufferRange)/(1<<20), yesNo[d.ShaderInt64], yesNo[d.ShaderInt16], use)
	}
	return nil
}
