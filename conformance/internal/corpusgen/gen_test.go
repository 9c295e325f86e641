package corpusgen

import (
	"bytes"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vkzip/vkzip/conformance"
)

// minCasesPerBackend is what the issue asks of every backend, across all categories (as in package
// conformance's tests).
const minCasesPerBackend = 200

// committed is the committed corpus directory (conformance/corpus).
var committed = os.DirFS(filepath.Join("..", "..", "corpus"))

func corpora(t *testing.T) []*conformance.Corpus {
	t.Helper()
	cs, err := conformance.Load()
	require.NoError(t, err)
	return cs
}

func TestCorpusMatchesRegistry(t *testing.T) {
	for _, c := range corpora(t) {
		var f *Format
		for _, x := range Formats() {
			if x.Name == c.Format {
				f = &x
			}
		}
		require.NotNil(t, f, "corpus of unregistered format %s", c.Format)
		assert.Equal(t, f.Version, c.Version, "%s: registered version differs from the committed corpus: regenerate", c.Format)
		assert.Equal(t, f.ID, c.FormatID)
		count := map[string]int{}
		for _, k := range c.Cases {
			count[k.Category]++
			assert.NotEmpty(t, k.Container.SHA256, k.ID)
			if assert.NotNil(t, k.ContainerV2, k.ID) {
				assert.Len(t, k.ContainerV2.SHA256, 64, k.ID)
			}
			if k.Body != nil {
				assert.Len(t, k.Body.SHA256, 64, k.ID)
			}
		}
		for _, iv := range c.Invalid {
			count[iv.Category]++
			assert.NotNil(t, conformance.ClassError(iv.Class), iv.ID)
			assert.Contains(t, []string{LevelBody, LevelContainer}, iv.Level, iv.ID)
		}
		total := 0
		for _, cat := range Categories(c.Format) {
			assert.GreaterOrEqual(t, count[cat.Name], cat.Min, "%s/%s", c.Format, cat.Name)
			total += count[cat.Name]
			delete(count, cat.Name)
		}
		assert.Empty(t, count, "categories in the corpus that nothing registers")
		assert.GreaterOrEqual(t, total, minCasesPerBackend)
	}
}

// TestCorpusUpToDate regenerates the corpus into a temporary directory: it must be byte-identical to the committed
// one, so expectations change only when someone regenerates on purpose (go run ./conformance/gen).
func TestCorpusUpToDate(t *testing.T) {
	src := committed
	dir := t.TempDir()
	require.NoError(t, Generate(src, dir))
	for _, f := range Formats() {
		for _, name := range []string{"manifest.json", "data.bin"} {
			got, err := os.ReadFile(filepath.Join(dir, f.Name, name))
			require.NoError(t, err)
			want, err := fs.ReadFile(src, f.Name+"/"+name)
			require.NoError(t, err)
			require.True(t, bytes.Equal(got, want),
				"%s/%s differs from a fresh generation: run `go run ./conformance/gen` and review the diff", f.Name, name)
		}
	}
}
