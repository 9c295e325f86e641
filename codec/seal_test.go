package codec_test

import (
	"testing"

	"github.com/vkzip/vkzip/codec"
	"github.com/vkzip/vkzip/codec/internal/splicetest"
)

// TestSealsCatchSplices: every splice of valid bodies (swapped, duplicated, another encoding's metadata, a body
// moved between frames, frames reordered) decodes silently in version 1 and is refused in version 2, on the
// reference backend (the Vulkan backend runs the same in codec/vkcodec).
func TestSealsCatchSplices(t *testing.T) {
	c, err := codec.New(codec.WithBackend(codec.NewCPUBackend(0)))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	splicetest.Check(t, c, nil)
}
