package codec_test

import (
	"bytes"
	"context"
	"fmt"

	"github.com/vkzip/vkzip/codec"
	"github.com/vkzip/vkzip/codec/layout"
	"github.com/vkzip/vkzip/tensorfile"
)

// EncodeFile and DecodeFile: a raw BF16 file (any io.Reader: a file, a pipe) to a payload of frames on any
// io.Writer, and back byte for byte, in memory bounded by a few frames whatever the file's size.
func ExampleCodec_EncodeFile() {
	c, err := codec.New(codec.WithBackendName("cpu", ""))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer c.Close()
	ctx := context.Background()
	raw := kvLike(1 << 20) // 2 MiB of BF16 values

	var payload bytes.Buffer
	st, err := c.EncodeFile(ctx, &payload, bytes.NewReader(raw), codec.FileOptions{
		OpenOptions: tensorfile.OpenOptions{Kind: tensorfile.Raw, DType: layout.DTypeBF16},
		Name:        "cache.bin", // names the tensor "cache"
		FrameSize:   1 << 20,     // 1 MiB of input per frame (default 32 MiB)
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("%d bytes in, %d frames, tensors: %v\n", st.InputBytes, st.Frames, st.Formats)

	var back bytes.Buffer
	if _, err := c.DecodeFile(ctx, &back, &payload); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("identical:", bytes.Equal(back.Bytes(), raw))
	// Output:
	// 2097152 bytes in, 2 frames, tensors: [{splitzip4 2}]
	// identical: true
}
