// Package layers holds the test that keeps the project's packages in one
// direction: sources → skill → catalog → skillserver → skills on the serving
// side, wire → skillclient → host → gateway on the consuming side, the
// command on top. It has no code of its own.
package layers
