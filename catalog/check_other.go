//go:build !linux

package catalog

// checkFD stands in for check_linux.go's descriptor walk; it is never
// called here (useFDWalk is false).
func checkFD(*source, *Options) (*Catalog, error) {
	panic("catalog: no descriptor walk on this platform")
}
