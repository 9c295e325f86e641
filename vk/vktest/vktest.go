// Package vktest provides test helpers that open a Vulkan instance and
// device, skipping the test when none is available — or failing it when
// VKZIP_REQUIRE_VULKAN=1 (CI with lavapipe must not silently skip).
//
// With VKZIP_VALIDATE=1 the instance runs with the validation layer and
// the cleanup fails the test if any validation message was produced.
package vktest

import (
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/vkzip/vkzip/vk"
)

// EnvRequire makes missing Vulkan a test failure instead of a skip.
const EnvRequire = "VKZIP_REQUIRE_VULKAN"

// Required reports whether VKZIP_REQUIRE_VULKAN=1 is set.
func Required() bool { return os.Getenv(EnvRequire) == "1" }

// Unavailable skips t, or fails it when Vulkan is required.
func Unavailable(t testing.TB, format string, args ...any) {
	t.Helper()
	if Required() {
		t.Fatalf("Vulkan required ("+EnvRequire+"=1) but unavailable: "+format, args...)
	}
	t.Skipf("Vulkan unavailable: "+format, args...)
}

// Options tune OpenTestInstance / OpenTestDeviceWith.
type Options struct {
	Instance vk.InstanceOptions
	Device   vk.DeviceOptions
	// AllowValidationMessages disables the zero-message check at cleanup
	// (for tests that provoke validation errors on purpose).
	AllowValidationMessages bool
}

// OpenTestInstance creates an instance closed at test cleanup.
func OpenTestInstance(t testing.TB) *vk.Instance {
	t.Helper()
	return OpenTestInstanceWith(t, Options{})
}

// OpenTestInstanceWith is OpenTestInstance with options.
func OpenTestInstanceWith(t testing.TB, o Options) *vk.Instance {
	t.Helper()
	if o.Instance.AppName == "" {
		o.Instance.AppName = "vkzip-test"
	}
	inst, err := vk.NewInstance(o.Instance)
	if err != nil {
		if errors.Is(err, vk.ErrNoVulkan) || errors.Is(err, vk.ErrNoDevice) {
			Unavailable(t, "%v", err)
		}
		t.Fatalf("vk.NewInstance: %v", err)
	}
	t.Cleanup(func() {
		// Collect messages before Close: they belong to this test.
		msgs := inst.ValidationMessages()
		n := inst.ValidationMessageCount()
		if err := inst.Close(); err != nil {
			t.Errorf("Instance.Close: %v", err)
		}
		if inst.ValidationEnabled() && !o.AllowValidationMessages && n > 0 {
			t.Errorf("%d validation messages:\n%s", n, strings.Join(msgs, "\n"))
		}
	})
	return inst
}

// OpenTestDevice opens the device chosen by VKZIP_DEVICE (or the best
// usable one) and closes it, and its instance, at test cleanup.
func OpenTestDevice(t testing.TB) *vk.Device {
	t.Helper()
	return OpenTestDeviceWith(t, Options{})
}

// OpenTestDeviceWith is OpenTestDevice with options.
func OpenTestDeviceWith(t testing.TB, o Options) *vk.Device {
	t.Helper()
	inst := OpenTestInstanceWith(t, o)
	devs, err := inst.Devices()
	if err != nil {
		t.Fatalf("Instance.Devices: %v", err)
	}
	info, err := vk.SelectDevice(devs, "")
	if err != nil {
		Unavailable(t, "%v", err)
	}
	dev, err := inst.OpenDevice(info, o.Device)
	if err != nil {
		t.Fatalf("OpenDevice(%s): %v", info.Name, err)
	}
	// Registered after the instance cleanup, so it runs first (LIFO).
	t.Cleanup(func() {
		if err := dev.Close(); err != nil {
			t.Errorf("Device.Close: %v", err)
		}
	})
	return dev
}
