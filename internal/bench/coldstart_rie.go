package bench

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"
)

// initReport is rapid's (the emulator's Lambda core) line for the Init
// phase: from starting the bootstrap to its first GET
// /2018-06-01/runtime/invocation/next, the span the stand-in times. The
// REPORT line's "Init Duration" is not it: the emulator times its own
// asynchronous Init call there (0.02 ms whatever the function does).
var initReport = regexp.MustCompile(`INIT REPORT\(durationMs: ([0-9.]+)\)`)

// lockedOutput is the emulator's output, written by its process and read
// here.
type lockedOutput struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedOutput) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedOutput) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func freeLoopback() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}

// timeInitRIE starts bin under AWS's Runtime Interface Emulator (rie),
// invokes it once with an empty event, and returns the Init duration the
// emulator reports. The emulator starts the bootstrap on the first
// invocation (its "exec" log line at its own start notwithstanding), as
// Lambda does on a cold start; each run is a new emulator, so each is
// cold.
func timeInitRIE(ctx context.Context, rie, bin string, env []string) (time.Duration, error) {
	addr, err := freeLoopback()
	if err != nil {
		return 0, err
	}
	rapi, err := freeLoopback()
	if err != nil {
		return 0, err
	}
	cmd := exec.Command(rie, "--runtime-interface-emulator-address", addr, "--runtime-api-address", rapi, bin)
	cmd.Dir, cmd.Env = filepath.Dir(bin), env
	out := &lockedOutput{}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		return 0, err
	}
	defer func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	}()
	if err := invokeEmpty(ctx, "http://"+addr+"/2015-03-31/functions/function/invocations"); err != nil {
		return 0, fmt.Errorf("%w: %s", err, out)
	}
	m := initReport.FindStringSubmatch(out.String())
	if m == nil || strings.Contains(out.String(), "INIT RTDONE(status: error)") {
		return 0, fmt.Errorf("no successful Init in the emulator's output: %s", out)
	}
	ms, err := strconv.ParseFloat(m[1], 64)
	if err != nil {
		return 0, err
	}
	return time.Duration(ms * float64(time.Millisecond)), nil
}

// invokeEmpty sends {} to the emulator's Invoke API once it listens.
func invokeEmpty(ctx context.Context, url string) error {
	deadline := time.Now().Add(30 * time.Second)
	for {
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader("{}"))
		if err != nil {
			return err
		}
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			_ = resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				return fmt.Errorf("invoke: %s", resp.Status)
			}
			return nil
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return fmt.Errorf("invoke: %w", err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
