package endpoint

// BodyParses returns how many request bodies e parsed for its metrics
// label.
func BodyParses(e *Endpoint) int64 { return e.parses.Load() }
