// Package moto starts moto's server (moto_server, a Python emulator of
// DynamoDB with streams, SQS, Secrets Manager and more) on a free loopback
// port: the second emulator the AWS-backed tests run on (`make test-moto`),
// so a behaviour shown on kumo is shown on an emulator no one here wrote.
package moto

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"time"
)

// Install is how to get moto_server, for the error a missing one gives.
const Install = "pip install 'moto[server]'"

// Process is a running moto_server.
type Process struct {
	// Endpoint is its URL, for AWS_ENDPOINT_URL.
	Endpoint string
	cmd      *exec.Cmd
	exited   chan error
}

// Path is the server binary: $MOTO_BIN, else moto_server on PATH.
func Path() (string, error) {
	if p := os.Getenv("MOTO_BIN"); p != "" {
		return p, nil
	}
	p, err := exec.LookPath("moto_server")
	if err != nil {
		return "", fmt.Errorf("moto_server is not on PATH (install it with %s, or set MOTO_BIN): %w", Install, err)
	}
	return p, nil
}

// Start runs moto_server on a free port and waits until it answers HTTP:
// moto is a Python program whose imports take a second or more, so a
// listening socket alone is the first sign, an answer the real one.
func Start() (*Process, error) {
	bin, err := Path()
	if err != nil {
		return nil, err
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("free port: %w", err)
	}
	addr := l.Addr().String()
	_ = l.Close()
	_, port, _ := net.SplitHostPort(addr)
	cmd := exec.Command(bin, "-H", "127.0.0.1", "-p", port)
	// Its request log goes nowhere: a test run's output is the tests'.
	cmd.Stdout, cmd.Stderr = nil, nil
	dieWithParent(cmd)
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", bin, err)
	}
	p := &Process{Endpoint: "http://" + addr, cmd: cmd, exited: make(chan error, 1)}
	go func() { p.exited <- cmd.Wait() }()
	if err := p.wait(60 * time.Second); err != nil {
		p.Stop()
		return nil, err
	}
	return p, nil
}

// wait polls the server until it answers or exits.
func (p *Process) wait(limit time.Duration) error {
	client := &http.Client{Timeout: time.Second}
	deadline := time.Now().Add(limit)
	for time.Now().Before(deadline) {
		select {
		case err := <-p.exited:
			p.exited <- err
			return fmt.Errorf("moto_server exited before it answered: %v", err)
		default:
		}
		resp, err := client.Get(p.Endpoint + "/moto-api/")
		if err == nil {
			_ = resp.Body.Close()
			return nil
		}
		time.Sleep(100 * time.Millisecond)
	}
	return errors.New("moto_server did not answer on " + p.Endpoint + " within " + limit.String())
}

// Stop kills the server and waits for it to exit.
func (p *Process) Stop() {
	if p == nil {
		return
	}
	_ = p.cmd.Process.Kill()
	err := <-p.exited
	p.exited <- err
}
