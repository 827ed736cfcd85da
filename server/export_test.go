package server

// Show exposes how error messages render a URI.
var Show = show

// AddCapability exposes addCapability to tests.
var AddCapability = addCapability

// FastServed returns how many requests the thin read path answered.
func FastServed(srv *Server) int64 { return srv.fast.Load() }
