package conformance

import "fmt"

// Verify, when set, checks a format's generated files (name → contents, as GenerateFormat returns them) before
// Generate writes any of them; an error stops Generate with none of that format's files written. The corpus
// generator (conformance/gen) sets it to hold the corpus to an independent implementation of the format, which
// the vkzip binary does not link.
var Verify func(format string, files map[string][]byte) error

// Input is the bytes of one of the corpus's inputs, generated or stored, checked against its SHA-256 when the
// corpus loaded.
func (c *Corpus) Input(id string) ([]byte, error) {
	b, ok := c.inputs[id]
	if !ok {
		return nil, fmt.Errorf("corpus %s: no input %s", c.Format, id)
	}
	return b, nil
}
