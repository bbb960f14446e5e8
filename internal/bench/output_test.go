package bench

import (
	"fmt"
	"io"
	"os"
	"testing"
	"time"
)

// What a function wires on os.Stdout and os.Stderr while it is built
// writes to its output for good, counted apart, and the process's own
// stdout and stderr are back once the build returns; the setup's bytes
// are forgotten by reset.
func TestOutputCountsWhatTheBuiltFunctionWrites(t *testing.T) {
	stdout, stderr := os.Stdout, os.Stderr
	o, err := newOutput()
	if err != nil {
		t.Fatal(err)
	}
	var logs, metrics io.Writer
	if err := o.capture(func() error {
		logs, metrics = os.Stderr, os.Stdout
		fmt.Fprint(os.Stderr, "setup line\n")
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if os.Stdout != stdout || os.Stderr != stderr {
		t.Fatal("os.Stdout or os.Stderr not restored")
	}
	waitFor(t, func() bool { return o.stderr.n.Load() == 11 })
	o.reset()
	fmt.Fprint(logs, "0123456789")
	fmt.Fprint(metrics, "01234")
	if got := o.close(); got != (Written{Stderr: 10, Stdout: 5}) || got.Total() != 15 {
		t.Fatalf("counted %+v, want 10 B of logs and 5 of EMF", got)
	}
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	for end := time.Now().Add(2 * time.Second); !cond(); time.Sleep(time.Millisecond) {
		if time.Now().After(end) {
			t.Fatal("condition never held")
		}
	}
}
