package conformance

// Format is a payload format the corpus covers. Version is the corpus version of that format: bump it with every
// change of its cases or expectations.
type Format struct {
	Name    string // codec format name (codec.WithFormat)
	ID      uint8  // format id (layout.Format*)
	Version int
}
