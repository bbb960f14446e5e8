//go:build !linux

package moto

import "os/exec"

// dieWithParent is Linux-only; elsewhere Stop is the only cleanup.
func dieWithParent(*exec.Cmd) {}
