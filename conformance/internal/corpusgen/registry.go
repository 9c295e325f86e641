package corpusgen

import (
	"fmt"
	"sync"

	"github.com/vkzip/vkzip/conformance"
)

// Format is the runner's description of a payload format (conformance.Format).
type Format = conformance.Format

// Category is a named group of cases of one format. Generate adds the cases (Gen.Valid, Gen.Invalid); Min is the
// fewest it must add, checked by the generator and the tests.
type Category struct {
	Format   string
	Name     string
	About    string
	Min      int
	Generate func(g *Gen) error
}

var (
	regMu      sync.Mutex
	formats    []Format
	categories []Category
)

// RegisterFormat adds a format to the corpus generator.
func RegisterFormat(f Format) {
	regMu.Lock()
	defer regMu.Unlock()
	for _, x := range formats {
		if x.Name == f.Name {
			panic("conformance: format " + f.Name + " registered twice")
		}
	}
	formats = append(formats, f)
}

// Register adds a category of cases to a registered format. Categories generate in registration order.
func Register(c Category) {
	regMu.Lock()
	defer regMu.Unlock()
	for _, x := range categories {
		if x.Format == c.Format && x.Name == c.Name {
			panic(fmt.Sprintf("conformance: category %s/%s registered twice", c.Format, c.Name))
		}
	}
	categories = append(categories, c)
}

// Formats lists the registered formats.
func Formats() []Format {
	regMu.Lock()
	defer regMu.Unlock()
	return append([]Format(nil), formats...)
}

// Categories lists the registered categories of a format, in registration order.
func Categories(format string) []Category {
	regMu.Lock()
	defer regMu.Unlock()
	var out []Category
	for _, c := range categories {
		if c.Format == format {
			out = append(out, c)
		}
	}
	return out
}
