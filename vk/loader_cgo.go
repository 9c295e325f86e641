//go:build cgo

package vk

/*
#cgo LDFLAGS: -ldl
#include <stdlib.h>
#include "vkz.h"
*/
import "C"

import (
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"unsafe"

	vulkan "github.com/vulkan-go/vulkan"
)

// DefaultLoaderPath is the library opened unless VKZIP_VULKAN_LIB is set.
// libvulkan.so (without .1) only exists with the -dev package.
const DefaultLoaderPath = "libvulkan.so.1"

var loader struct {
	once sync.Once
	path string
	err  error
}

// globalLive counts live Vulkan objects created by this package.
var globalLive atomic.Int64

// LiveObjects returns the number of Vulkan objects created by this package
// (in all instances and devices) that are not yet destroyed.
func LiveObjects() int { return int(globalLive.Load()) }

// Load opens the Vulkan loader once per process. It is called by
// NewInstance; calling it directly only reports availability.
func Load() error {
	loader.once.Do(func() {
		path := os.Getenv(EnvVulkanLib)
		if path == "" {
			path = DefaultLoaderPath
		}
		loader.path = path
		if err := openLoader(path, true); err != nil {
			loader.err = err
			return
		}
		// vulkan-go resolves through the same loader (never dlopening a
		// library of its own): Init fills its instance-independent entry
		// points now, bindVulkanGo the rest from the first instance.
		vulkan.SetGetInstanceProcAddr(C.vkz_gipa_ptr())
		if err := vulkan.Init(); err != nil {
			loader.err = fmt.Errorf("%w: vulkan-go init: %v", ErrNoVulkan, err)
		}
	})
	return loader.err
}

// LoaderPath returns the library path Load used (empty before Load).
func LoaderPath() string {
	Load() //nolint:errcheck // only the path is wanted
	return loader.path
}

func openLoader(path string, install bool) error {
	cpath := C.CString(path)
	defer C.free(unsafe.Pointer(cpath))
	var buf [512]byte
	cerr := (*C.char)(unsafe.Pointer(&buf[0]))
	var ok C.int
	if install {
		ok = C.vkz_load(cpath, cerr, C.size_t(len(buf)))
	} else {
		ok = C.vkz_try_load(cpath, cerr, C.size_t(len(buf)))
	}
	if ok == 0 {
		return fmt.Errorf("%w: loading %s: %s", ErrNoVulkan, path, C.GoString(cerr))
	}
	return nil
}

// probeLoader checks a loader path without installing it (test hook).
func probeLoader(path string) error { return openLoader(path, false) }
