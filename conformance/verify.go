package conformance

import "fmt"

// Input is the bytes of one of the corpus's inputs, generated or stored, checked against its SHA-256 when the
// corpus loaded.
func (c *Corpus) Input(id string) ([]byte, error) {
	b, ok := c.inputs[id]
	if !ok {
		return nil, fmt.Errorf("corpus %s: no input %s", c.Format, id)
	}
	return b, nil
}
