// Package ci holds no code: its tests check that what the README tells a
// newcomer to run is exactly what CI runs, and that the system packages the
// tests need are all installed by that command, so the two cannot drift.
package ci
