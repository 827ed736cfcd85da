//go:build !linux && !darwin

package install

import "errors"

var errNoExchange = errors.New("no atomic exchange")

// exchange is unavailable here: Place moves the old folder aside first.
func exchange(a, b string) error { return errNoExchange }
