// Package kumo starts the kumo AWS emulator on a free loopback port, for
// tests and the benchmark: no Docker, one static binary built by make.
package kumo

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"time"
)

// Process is a running emulator.
type Process struct {
	// Endpoint is its URL, for AWS_ENDPOINT_URL.
	Endpoint string
	cmd      *exec.Cmd
}

// Path is the emulator binary: $KUMO_BIN, else bin/kumo in the repository.
func Path() string {
	if p := os.Getenv("KUMO_BIN"); p != "" {
		return p
	}
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "bin", "kumo")
}

// Start runs the emulator at Path on a free port and waits until it listens.
func Start() (*Process, error) {
	bin := Path()
	if _, err := os.Stat(bin); err != nil {
		return nil, fmt.Errorf("kumo binary (run `make kumo`): %w", err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("free port: %w", err)
	}
	addr := l.Addr().String()
	_ = l.Close()
	_, port, _ := net.SplitHostPort(addr)
	cmd := exec.Command(bin, "--host", "127.0.0.1", "--port", port)
	cmd.Env = append(os.Environ(), "KUMO_LOG_LEVEL=warn")
	dieWithParent(cmd)
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start kumo: %w", err)
	}
	p := &Process{Endpoint: "http://" + addr, cmd: cmd}
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		c, err := net.DialTimeout("tcp", addr, 200*time.Millisecond)
		if err == nil {
			_ = c.Close()
			return p, nil
		}
		time.Sleep(50 * time.Millisecond)
	}
	p.Stop()
	return nil, fmt.Errorf("kumo did not listen on %s within 20s", addr)
}

// Stop kills the emulator and waits for it.
func (p *Process) Stop() {
	if p == nil || p.cmd.Process == nil {
		return
	}
	_ = p.cmd.Process.Kill()
	_, _ = p.cmd.Process.Wait()
}
