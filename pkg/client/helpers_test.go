package client_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/aijobs/aijobs/pkg/client"
	"github.com/aijobs/aijobs/pkg/client/clienttest"
)

// sleeper records the waits a client asks for and runs a step at each,
// instead of waiting: the test decides what the world looks like after
// each wait.
type sleeper struct {
	mu    sync.Mutex
	waits []time.Duration
	steps []func()
	clock *clienttest.Clock // advanced by each wait when set
}

func (s *sleeper) Sleep(ctx context.Context, d time.Duration) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.mu.Lock()
	s.waits = append(s.waits, d)
	var step func()
	if len(s.steps) > 0 {
		step, s.steps = s.steps[0], s.steps[1:]
	}
	s.mu.Unlock()
	if s.clock != nil {
		s.clock.Advance(d)
	}
	if step != nil {
		step()
	}
	return nil
}

func (s *sleeper) Waits() []time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]time.Duration(nil), s.waits...)
}

// newClient is a client of url as token's tenant ("" for none) that never
// really sleeps.
func newClient(t *testing.T, url, token string, edit ...func(*client.Config)) (*client.Client, *sleeper) {
	t.Helper()
	sl := &sleeper{}
	cfg := client.Config{BaseURL: url, Sleep: sl.Sleep, Now: func() time.Time { return clienttest.T0 }}
	if token != "" {
		cfg.Auth = client.BearerToken(token)
	}
	for _, e := range edit {
		e(&cfg)
	}
	c, err := client.New(cfg)
	if err != nil {
		t.Fatalf("client.New: %v", err)
	}
	return c, sl
}

func prompt(text string) client.CreateBody {
	return client.CreateBody{Input: client.UserPrompt(text, 64)}
}
