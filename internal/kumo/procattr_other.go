//go:build !linux

package kumo

import "os/exec"

// dieWithParent is Linux-only; elsewhere Stop is the only cleanup.
func dieWithParent(*exec.Cmd) {}
