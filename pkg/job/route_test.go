package job_test

import (
	"testing"
	"time"

	"github.com/aijobs/aijobs/pkg/job"
)

func TestRoute(t *testing.T) {
	cheap := job.Price{InputPerToken: 1, OutputPerToken: 2}
	dear := job.Price{InputPerToken: 10, OutputPerToken: 20}
	r := job.Route{Rungs: []job.Rung{
		{Provider: "a", Model: "m1", Price: cheap, Timeout: 30 * time.Second},
		{Provider: "b", Model: "m2", Price: dear, MaxTokens: 4, Timeout: 45 * time.Second},
	}, FallbackOn: []job.ErrorClass{job.RateLimited}}
	// 11 bytes over two messages: (11+1)/2 = 6, plus 8 per message = 22.
	in := job.Input{Messages: []job.Message{{Role: "system", Content: "be"}, {Role: "user", Content: "brief pls"}}, MaxTokens: 10}

	if got := r.Timeout(); got != 75*time.Second {
		t.Errorf("Timeout = %s, want every rung's, 75s", got)
	}
	if !r.FallsBackOn(job.RateLimited) || r.FallsBackOn(job.Overloaded) {
		t.Error("FallsBackOn does not follow FallbackOn")
	}
	tests := []struct {
		name  string
		rung  job.Rung
		in    job.Input
		cap   int
		worst job.Nanocents
	}{
		{"no rung cap: the job's", r.Rungs[0], in, 10, 22*1 + 10*2},
		{"rung cap below the job's", r.Rungs[1], in, 4, 22*10 + 4*20},
		{"rung cap above the job's", job.Rung{Price: dear, MaxTokens: 50}, in, 10, 22*10 + 10*20},
		{"job without max_tokens: the rung's", job.Rung{Price: dear, MaxTokens: 50}, job.Input{}, 50, 50 * 20},
		{"no input at all", job.Rung{Price: dear}, job.Input{}, 0, 0},
	}
	for _, tt := range tests {
		if got := tt.rung.OutputCap(tt.in); got != tt.cap {
			t.Errorf("%s: OutputCap = %d, want %d", tt.name, got, tt.cap)
		}
		if got := tt.rung.WorstCase(tt.in); got != tt.worst {
			t.Errorf("%s: WorstCase = %d, want %d", tt.name, got, tt.worst)
		}
	}
	if got := r.Reserve(in, nil); got != 42 {
		t.Errorf("Reserve = %d, want the first rung's worst case 42", got)
	}
	if got := (job.Route{}).Reserve(in, nil); got != 0 {
		t.Errorf("an empty route reserves %d", got)
	}
}
