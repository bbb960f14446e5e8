package main

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/aijobs/aijobs/pkg/client/clienttest"
)

// invocation is one run of the CLI in a test.
type invocation struct {
	args      []string
	env       map[string]string
	stdin     string
	stdinTTY  bool
	stdoutTTY bool
	// steps run at each wait the client makes (retries and polls), in
	// order, instead of sleeping; block makes every wait last until the
	// context ends.
	steps   []func()
	block   bool
	loadAWS func(context.Context, string) (aws.Config, error)
}

type result struct {
	stdout, stderr string
	code           int
	err            error
}

func (in invocation) run(t *testing.T) result {
	t.Helper()
	var stdout, stderr bytes.Buffer
	var mu sync.Mutex
	steps := in.steps
	e := &env{
		stdin: strings.NewReader(in.stdin), stdout: &stdout, stderr: &stderr,
		stdinTTY: in.stdinTTY, stdoutTTY: in.stdoutTTY,
		getenv: func(k string) string { return in.env[k] },
		loadAWS: func(context.Context, string) (aws.Config, error) {
			return aws.Config{}, errors.New("no AWS in tests")
		},
		openURL: func(string) error { return errors.New("no browser in tests") },
		now:     func() time.Time { return clienttest.T0 },
		sleep: func(ctx context.Context, _ time.Duration) error {
			if in.block {
				<-ctx.Done()
				return ctx.Err()
			}
			mu.Lock()
			var step func()
			if len(steps) > 0 {
				step, steps = steps[0], steps[1:]
			}
			mu.Unlock()
			if step != nil {
				step()
			}
			return ctx.Err()
		},
	}
	if in.loadAWS != nil {
		e.loadAWS = in.loadAWS
	}
	err := run(context.Background(), in.args, e)
	code := report(&stderr, err)
	return result{stdout: stdout.String(), stderr: stderr.String(), code: code, err: err}
}

func args(s ...string) []string { return s }
