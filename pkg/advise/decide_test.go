package advise

import (
	"strings"
	"testing"
	"time"
)

func TestDecide(t *testing.T) {
	tests := []struct {
		name     string
		in       Input
		mode     Mode
		rule     Rule
		reasonAs []string // substrings the reasons must hold
	}{
		{
			name: "(a) chat reply, awaited, p99 12s behind an HTTP API",
			in:   Input{Hop: APIGatewayHTTP, P99: 12 * time.Second},
			mode: Sync, rule: RuleFits,
			reasonAs: []string{"fits under 80% of the shortest hop, API Gateway HTTP API (30s): 24s", "stream the tokens"},
		},
		{
			name: "(b) long report, awaited, p99 95s with retries and a fallback rung, behind a REST API",
			in:   Input{Hop: APIGatewayREST, P99: 95 * time.Second},
			mode: Async, rule: RuleHopTooShort,
			reasonAs: []string{"(1m35s) is over 80% of the shortest hop, API Gateway REST API (29s): 23.2s", "still billed", "a second time"},
		},
		{
			name: "(c) nightly batch summarisation, p99 8s, outlives the session",
			in:   Input{Hop: APIGatewayHTTP, P99: 8 * time.Second, OutlivesSession: true},
			mode: Async, rule: RuleOutlivesSession,
			reasonAs: []string{"nobody awaits the answer", "survives a closed tab"},
		},
		{
			name: "exactly at the headroom limit fits",
			in:   Input{Hop: APIGatewayHTTP, P99: 24 * time.Second},
			mode: Sync, rule: RuleFits,
		},
		{
			name: "one nanosecond over the limit does not",
			in:   Input{Hop: APIGatewayHTTP, P99: 24*time.Second + 1},
			mode: Async, rule: RuleHopTooShort,
		},
		{
			name: "exactly at the REST limit (23.2s) fits",
			in:   Input{Hop: APIGatewayREST, P99: 23200 * time.Millisecond},
			mode: Sync, rule: RuleFits,
		},
		{
			name: "under the hop but inside the headroom is async",
			in:   Input{Hop: ALB, P99: 55 * time.Second},
			mode: Async, rule: RuleHopTooShort,
		},
		{
			name: "outlives the session and too slow: async, both said",
			in:   Input{Hop: APIGatewayREST, P99: 10 * time.Minute, OutlivesSession: true},
			mode: Async, rule: RuleOutlivesSession,
			reasonAs: []string{"nobody awaits", "besides, its p99 with retries (10m0s) would not fit"},
		},
		{
			name: "an explicit hop",
			in:   Input{Hop: Hop{Name: "CloudFront origin", Timeout: 10 * time.Second}, P99: 9 * time.Second},
			mode: Async, rule: RuleHopTooShort,
			reasonAs: []string{"CloudFront origin (10s): 8s"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d, err := Decide(tt.in)
			if err != nil {
				t.Fatalf("Decide: %v", err)
			}
			if d.Mode != tt.mode || d.Rule != tt.rule {
				t.Fatalf("Decide = %s by rule %d, want %s by rule %d; reasons: %q", d.Mode, d.Rule, tt.mode, tt.rule, d.Reasons)
			}
			if len(d.Reasons) == 0 {
				t.Fatal("no reasons given")
			}
			all := strings.Join(d.Reasons, "\n")
			for _, want := range tt.reasonAs {
				if !strings.Contains(all, want) {
					t.Errorf("reasons lack %q:\n%s", want, all)
				}
			}
		})
	}
}

func TestDecideRefusesNonPositiveInputs(t *testing.T) {
	tests := []struct {
		name string
		in   Input
		want string
	}{
		{"zero p99", Input{Hop: APIGatewayHTTP}, "p99"},
		{"negative p99", Input{Hop: APIGatewayHTTP, P99: -time.Second}, "p99"},
		{"zero hop", Input{Hop: Hop{Name: "x"}, P99: time.Second}, "hop"},
		{"negative hop", Input{Hop: Hop{Name: "x", Timeout: -time.Second}, P99: time.Second}, "hop"},
		{"zero p99 even when it outlives the session", Input{Hop: APIGatewayHTTP, OutlivesSession: true}, "p99"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d, err := Decide(tt.in)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Decide = %+v, %v; want an error about %s", d, err, tt.want)
			}
		})
	}
}

func TestLimit(t *testing.T) {
	tests := []struct{ hop, want time.Duration }{
		{30 * time.Second, 24 * time.Second},
		{29 * time.Second, 23200 * time.Millisecond},
		{60 * time.Second, 48 * time.Second},
		{99, 79}, // 79.2 ns rounds down: the limit never exceeds 80 %
		// The largest duration: no overflow (hop*80 would wrap negative).
		{time.Duration(1<<63 - 1), 92233720368547758*80 + 5},
	}
	for _, tt := range tests {
		if got := Limit(tt.hop); got != tt.want {
			t.Errorf("Limit(%d) = %d, want %d", tt.hop, got, tt.want)
		}
	}
}
