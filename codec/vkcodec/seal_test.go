package vkcodec

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vkzip/vkzip/codec"
	"github.com/vkzip/vkzip/codec/internal/splicetest"
)

// TestSealsCatchSplices runs the splice attacks (codec/internal/splicetest) through the Vulkan backend: the kernels
// judge every body valid, and the container layer's seals must still refuse each splice with the reference's class.
func TestSealsCatchSplices(t *testing.T) {
	b := openTest(t, Options{})
	c, err := codec.New(codec.WithBackend(b))
	require.NoError(t, err)
	defer c.Close()
	splicetest.Check(t, c, func(format string) bool {
		id, ok := codec.FormatByName(format)
		return ok && !codec.SupportsFormat(b, id)
	})
}
