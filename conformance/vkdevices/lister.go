// Package vkdevices is the Vulkan side of package conformance: the DeviceLister of the Vulkan loader (Lister),
// which opens a vkcodec backend per device, and the device-resident target (Resident) on each. Package
// conformance itself reaches devices only through codec.Backend and the DeviceLister it is given.
package vkdevices

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"

	"github.com/vkzip/vkzip/codec/vkcodec"
	"github.com/vkzip/vkzip/conformance"
	"github.com/vkzip/vkzip/vk"
)

// Lister is the conformance.DeviceLister of the Vulkan loader: vkcodec.Devices, vk.SelectDevice and
// vkcodec.Open. The zero value is ready to use.
type Lister struct {
	mu   sync.Mutex
	seen map[int]vk.DeviceInfo // the loader's descriptions of the devices Devices last listed, by index
}

// Info is a Vulkan device's description for conformance.
func Info(d vk.DeviceInfo) conformance.DeviceInfo {
	return conformance.DeviceInfo{Index: d.Index, Name: d.Name, Usable: d.Usable, Reason: d.Reason,
		Type: d.Type.String(), VendorName: d.VendorName, VendorID: d.VendorID, DeviceID: d.DeviceID,
		DriverID: d.DriverID, DriverName: d.DriverName, DriverInfo: d.DriverInfo,
		DriverVersion: d.DriverVersionString, APIVersion: d.APIVersion, SubgroupSize: d.SubgroupSize}
}

// Devices lists the devices through a short-lived Vulkan instance.
func (l *Lister) Devices() ([]conformance.DeviceInfo, error) {
	devs, err := vkcodec.Devices()
	if err != nil {
		return nil, err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.seen = map[int]vk.DeviceInfo{}
	out := make([]conformance.DeviceInfo, len(devs))
	for i, d := range devs {
		l.seen[d.Index] = d
		out[i] = Info(d)
	}
	return out, nil
}

// Select is vk.SelectDevice over devices Devices listed.
func (l *Lister) Select(devs []conformance.DeviceInfo, spec string) (conformance.DeviceInfo, error) {
	l.mu.Lock()
	vdevs := make([]vk.DeviceInfo, 0, len(devs))
	for _, d := range devs {
		v, ok := l.seen[d.Index]
		if !ok {
			l.mu.Unlock()
			return conformance.DeviceInfo{}, fmt.Errorf("%w: device %d (%s) was not listed by this lister",
				conformance.ErrNoDevice, d.Index, d.Name)
		}
		vdevs = append(vdevs, v)
	}
	l.mu.Unlock()
	d, err := vk.SelectDevice(vdevs, spec)
	if err != nil {
		// The same message, of class conformance.ErrNoDevice (whose text is vk.ErrNoDevice's).
		if errors.Is(err, vk.ErrNoDevice) {
			err = fmt.Errorf("%w%s", conformance.ErrNoDevice, strings.TrimPrefix(err.Error(), vk.ErrNoDevice.Error()))
		}
		return conformance.DeviceInfo{}, err
	}
	return Info(d), nil
}

// Open opens a vkcodec backend on device d.Index, and the device-resident target on it when resident is true.
func (l *Lister) Open(d conformance.DeviceInfo, resident bool) ([]conformance.Target, error) {
	b, err := vkcodec.Open(vkcodec.Options{Device: strconv.Itoa(d.Index)})
	if err != nil {
		return nil, err
	}
	t := conformance.Target{Backend: b, Device: conformance.VulkanDevice(Info(b.Info()), b.Device())}
	if !resident {
		return []conformance.Target{t}, nil
	}
	return []conformance.Target{t, ResidentTarget(t)}, nil
}

// ResidentTarget is the device-resident path (Resident) of a Vulkan target, on the same backend and device.
func ResidentTarget(t conformance.Target) conformance.Target {
	r := &Resident{B: t.Backend.(*vkcodec.Backend)}
	d := t.Device
	d.ID = "vulkan-resident:" + d.ID[len("vulkan:"):]
	d.Backend = r.Name()
	return conformance.Target{Backend: r, Device: d}
}
