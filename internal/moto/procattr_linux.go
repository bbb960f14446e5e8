package moto

import (
	"os/exec"
	"syscall"
)

// dieWithParent makes the emulator die with the process that started it,
// so a test binary that panics or times out leaves no emulator behind.
func dieWithParent(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
