package server

// Show exposes how error messages render a URI.
var Show = show

// AddCapability exposes addCapability to tests.
var AddCapability = addCapability
