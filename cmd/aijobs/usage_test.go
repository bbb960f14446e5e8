package main

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
)

// Every case here fails before any request is made (the endpoint does
// not exist), so a wrong exit code cannot hide behind a network error.
func TestUsageAndExitCodes(t *testing.T) {
	const ep = "--endpoint=http://127.0.0.1:1"
	tests := []struct {
		name   string
		in     invocation
		code   int
		stderr string // substring of the one error line
	}{
		{"no command", invocation{}, 2, "no command given"},
		{"unknown command", invocation{args: args("frobnicate")}, 2, `unknown command "frobnicate"`},
		{"unknown global flag", invocation{args: args("--bogus", "get")}, 2, "flag provided but not defined"},
		{"get without an id", invocation{args: args("get", ep)}, 2, "want 1 argument(s), got 0"},
		{"get with two ids", invocation{args: args("get", ep, "a", "b")}, 2, "want 1 argument(s), got 2"},
		{"get without an endpoint", invocation{args: args("get", "job_x")}, 2, "no endpoint"},
		{"bad output format", invocation{args: args("get", ep, "--output", "xml", "job_x")}, 2, `--output "xml"`},
		{"bad endpoint", invocation{args: args("get", "--endpoint", "ftp://x", "job_x")}, 2, "scheme"},
		{"token and sigv4", invocation{args: args("get", ep, "--token", "t", "--sigv4", "job_x")}, 2, "exclude each other"},
		{"region without sigv4", invocation{args: args("get", ep, "--region", "eu-west-1", "job_x")}, 2, "--region goes with --sigv4"},
		{"sigv4 without AWS config", invocation{args: args("get", ep, "--sigv4", "job_x")}, 2, "load the AWS config"},
		{"sigv4 without a region", invocation{args: args("get", ep, "--sigv4", "job_x"), loadAWS: awsConfig("", nil)}, 2, "needs a region"},
		{"sigv4 without credentials", invocation{args: args("get", ep, "--sigv4", "job_x"), loadAWS: awsConfig("eu-west-1", errors.New("no SSO session"))}, 2, "no AWS credentials: no SSO session"},
		{"wait with a negative timeout", invocation{args: args("wait", ep, "--timeout", "-1s", "job_x")}, 2, "--timeout"},
		{"submit without a key", invocation{args: args("submit", ep, "--prompt", "hi")}, 2, "--key is required"},
		{"submit with a bad key", invocation{args: args("submit", ep, "--key", "a\tb", "--prompt", "hi")}, 2, "--key is required"},
		{"submit with prompt and body", invocation{args: args("submit", ep, "--key", "k", "--prompt", "hi", "--body", "x.json")}, 2, "not both"},
		{"submit with two prompts", invocation{args: args("submit", ep, "--key", "k", "--prompt", "hi", "there")}, 2, "TEXT or --prompt, not both"},
		{"submit with two prompt arguments", invocation{args: args("submit", ep, "--key", "k", "hi", "there")}, 2, "want 0 to 1 arguments"},
		{"submit with a file and no prompt", invocation{args: args("submit", ep, "--key", "k", "--file", "x.pdf")}, 2, "--file goes with a prompt"},
		{"submit with a missing file", invocation{args: args("submit", ep, "--key", "k", "--file", "/nonexistent/x.pdf", "hi")}, 2, "no such file"},
		{"submit with nothing to send", invocation{args: args("submit", ep, "--key", "k"), stdinTTY: true}, 2, "pipe a body"},
		{"submit with a missing body file", invocation{args: args("submit", ep, "--key", "k", "--body", "/nonexistent/body.json")}, 2, "no such file"},
		{"submit with a body that is not JSON", invocation{args: args("submit", ep, "--key", "k"), stdin: "hello"}, 2, "not a create request"},
		{"submit with an unknown body field", invocation{args: args("submit", ep, "--key", "k"), stdin: `{"input":{},"colour":"red"}`}, 2, "unknown field"},
		{"submit with two bodies", invocation{args: args("submit", ep, "--key", "k"), stdin: `{"input":{}} {"input":{}}`}, 2, "more than one"},
		{"submit with a body without input", invocation{args: args("submit", ep, "--key", "k"), stdin: `{"model":"default"}`}, 2, "no input"},
		{"submit --max-tokens without --prompt", invocation{args: args("submit", ep, "--key", "k", "--max-tokens", "5"), stdin: `{"input":{}}`}, 2, "goes with a prompt"},
		{"submit with a sub-second deadline", invocation{args: args("submit", ep, "--key", "k", "--prompt", "hi", "--deadline", "1500ms")}, 2, "whole seconds"},
		{"submit with a bad budget", invocation{args: args("submit", ep, "--key", "k", "--prompt", "hi", "--budget-cents", "1e3")}, 2, "--budget-cents"},
		{"submit with a zero budget", invocation{args: args("submit", ep, "--key", "k", "--prompt", "hi", "--budget-cents", "0")}, 2, "--budget-cents"},
		{"submit with zero attempts", invocation{args: args("submit", ep, "--key", "k", "--prompt", "hi", "--max-attempts", "0")}, 2, "--max-attempts"},
		{"submit with metadata that is not an object", invocation{args: args("submit", ep, "--key", "k", "--prompt", "hi", "--metadata", "[1]")}, 2, "--metadata"},
		{"submit --timeout without --wait", invocation{args: args("submit", ep, "--key", "k", "--prompt", "hi", "--timeout", "1m")}, 2, "--timeout goes with --wait"},
		{"list with a bad state", invocation{args: args("list", ep, "--state", "done")}, 2, "--state"},
		{"list with a bad class", invocation{args: args("list", ep, "--error-class", "oops")}, 2, "--error-class"},
		{"list with a bad since", invocation{args: args("list", ep, "--since", "yesterday")}, 2, "--since"},
		{"list with a negative limit", invocation{args: args("list", ep, "--limit", "-1")}, 2, "--limit"},
		{"list with an argument", invocation{args: args("list", ep, "failed")}, 2, "want 0 argument(s)"},
		{"console on the network without TLS", invocation{args: args("console", "--listen", "0.0.0.0:0", "--allow-remote")}, 2, "--tls-cert and --tls-key, or --behind-proxy"},
		{"console with a certificate and no key", invocation{args: args("console", "--tls-cert", "cert.pem")}, 2, "go together"},
		{"console with a certificate it cannot read", invocation{args: args("console", "--tls-cert", "/nonexistent/c.pem", "--tls-key", "/nonexistent/k.pem")}, 2, "no such file"},
		{"advise without awaited or outlives", invocation{args: args("advise", "--p99", "5s")}, 2, "exactly one of --outlives and --awaited"},
		{"advise with both", invocation{args: args("advise", "--p99", "5s", "--awaited", "--outlives")}, 2, "exactly one"},
		{"advise without a p99", invocation{args: args("advise", "--awaited")}, 2, "give --p99"},
		{"advise with a zero p99", invocation{args: args("advise", "--awaited", "--p99", "0s")}, 2, "p99 latency must be positive"},
		{"advise with a negative p99", invocation{args: args("advise", "--awaited", "--p99", "-3s")}, 2, "must be positive"},
		{"advise with p99 and a plan", invocation{args: args("advise", "--awaited", "--p99", "5s", "--attempt-p99", "1s")}, 2, "not both"},
		{"advise with a bad hop", invocation{args: args("advise", "--awaited", "--p99", "5s", "--hop", "nlb")}, 2, "--hop"},
		{"advise with a bad plan", invocation{args: args("advise", "--awaited", "--attempt-p99", "5s", "--attempts", "3", "--backoffs", "1s")}, 2, "need 2 backoffs"},
		{"advise with a bad backoff", invocation{args: args("advise", "--awaited", "--attempt-p99", "5s", "--attempts", "2", "--backoffs", "soon")}, 2, "not a duration"},
		{"quarantine without a subcommand", invocation{args: args("quarantine")}, 2, "want a subcommand, list or lift"},
		{"quarantine with an unknown subcommand", invocation{args: args("quarantine", "drop")}, 2, `unknown subcommand "drop"`},
		{"quarantine with an unknown flag", invocation{args: args("quarantine", "--tenant", "t", "list")}, 2, "flag provided but not defined"},
		{"quarantine list with an argument", invocation{args: args("quarantine", "list", "jwt:a")}, 2, "want 0 argument(s)"},
		{"quarantine list with a bad output format", invocation{args: args("quarantine", "list", "--output", "xml")}, 2, `--output "xml"`},
		{"quarantine lift without flags", invocation{args: args("quarantine", "lift")}, 2, "missing --tenant, --route, --input-hash"},
		{"quarantine lift without a tenant", invocation{args: args("quarantine", "lift", "--route", "default", "--input-hash", "sha256:aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa")}, 2, "missing --tenant:"},
		{"quarantine lift without a route", invocation{args: args("quarantine", "lift", "--tenant", "jwt:a", "--input-hash", "sha256:aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa")}, 2, "missing --route:"},
		{"quarantine lift without an input hash", invocation{args: args("quarantine", "lift", "--tenant", "jwt:a", "--route", "default")}, 2, "missing --input-hash:"},
		{"quarantine lift with a bad input hash", invocation{args: args("quarantine", "lift", "--tenant", "jwt:a", "--route", "default", "--input-hash", "abc")}, 2, `--input-hash "abc": want sha256:`},
		{"quarantine lift with an argument", invocation{args: args("quarantine", "lift", "--tenant", "jwt:a", "--route", "default", "--input-hash", "sha256:aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", "extra")}, 2, "want 0 argument(s)"},
		{"network error", invocation{args: args("get", ep, "job_aaaaaaaaaaaaaaaaaaaaaaaaaa")}, 5, "network error: GET /jobs/job_aaaaaaaaaaaaaaaaaaaaaaaaaa: no answer after 4 tries"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := tt.in.run(t)
			if r.code != tt.code {
				t.Errorf("exit %d, want %d (err %v)", r.code, tt.code, r.err)
			}
			if !strings.Contains(r.stderr, tt.stderr) || !strings.HasPrefix(r.stderr, "aijobs: ") || strings.Count(r.stderr, "\n") != 1 {
				t.Errorf("stderr %q: want one line with %q", r.stderr, tt.stderr)
			}
			if r.stdout != "" {
				t.Errorf("stdout %q: a refusal prints nothing there", r.stdout)
			}
		})
	}
}

func awsConfig(region string, credErr error) func(context.Context, string) (aws.Config, error) {
	return func(context.Context, string) (aws.Config, error) {
		return aws.Config{Region: region, Credentials: aws.CredentialsProviderFunc(func(context.Context) (aws.Credentials, error) {
			return aws.Credentials{AccessKeyID: "AKID", SecretAccessKey: "SECRET"}, credErr
		})}, nil
	}
}

func TestHelp(t *testing.T) {
	for _, a := range [][]string{{"--help"}, {"-h"}, {"help"}} {
		r := invocation{args: a}.run(t)
		if r.code != 0 || !strings.Contains(r.stdout, "Commands:") || !strings.Contains(r.stdout, "6  wait timed out") || r.stderr != "" {
			t.Errorf("%v: exit %d, stdout %q, stderr %q", a, r.code, r.stdout, r.stderr)
		}
	}
	for _, cmd := range commands {
		t.Run(cmd.name, func(t *testing.T) {
			a := args("--token", "tok-SECRET", cmd.name, "--token", "tok-SECRET2")
			if cmd.name == "submit" {
				a = append(a, "--key", "SECRET-key") // a value given is not a default
			}
			r := invocation{args: append(a, "--help")}.run(t)
			if r.code != 0 || r.stderr != "" {
				t.Fatalf("exit %d, stderr %q", r.code, r.stderr)
			}
			for _, want := range []string{"Usage: aijobs " + cmd.name, "Global flags:", "--endpoint", "Exit codes:", "5  network error"} {
				if strings.Count(r.stdout, want) != 1 {
					t.Errorf("help has %q %d times, want once:\n%s", want, strings.Count(r.stdout, want), r.stdout)
				}
			}
			if strings.Contains(r.stdout, "SECRET") {
				t.Errorf("help shows the token:\n%s", r.stdout)
			}
		})
	}
}

func TestAdvise(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want []string
	}{
		{"(a) chat reply", args("advise", "--hop", "http", "--p99", "12s", "--awaited", "--output", "table"),
			[]string{"synchronous: answer on the open request, stream the tokens (rule 3)", "API Gateway HTTP API, 30s; synchronous up to 24s (80%)"}},
		{"(b) long report", args("advise", "--hop", "rest", "--p99", "95s", "--awaited", "--output", "table"),
			[]string{"asynchronous: a job, then a poll or a callback (rule 2)", "still billed"}},
		{"(b) from its plan", args("advise", "--hop", "rest", "--attempt-p99", "30s", "--attempts", "2", "--backoffs", "5s", "--rungs", "15s", "--awaited", "--output", "table"),
			[]string{"(rule 2)", "1m35s with retries and fallback rungs"}},
		{"(c) nightly batch", args("advise", "--hop", "http", "--p99", "8s", "--outlives", "--output", "table"),
			[]string{"asynchronous", "(rule 1)", "nobody awaits"}},
		{"an ALB given as a duration", args("advise", "--hop", "120s", "--p99", "90s", "--awaited", "--output", "table"),
			[]string{"(rule 3)", "a hop of 2m0s, 2m0s; synchronous up to 1m36s"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := invocation{args: tt.args}.run(t)
			if r.code != 0 {
				t.Fatalf("exit %d: %s", r.code, r.stderr)
			}
			for _, w := range tt.want {
				if !strings.Contains(r.stdout, w) {
					t.Errorf("output lacks %q:\n%s", w, r.stdout)
				}
			}
		})
	}

	r := invocation{args: args("advise", "--hop", "rest", "--p99", "95s", "--awaited")}.run(t) // piped: JSON
	var d decisionJSON
	if err := jsonUnmarshal(r.stdout, &d); err != nil {
		t.Fatalf("advise JSON %q: %v", r.stdout, err)
	}
	if d.Mode != "async" || d.Rule != 2 || d.HopSeconds != 29 || d.LimitSeconds != 23.2 || d.P99Seconds != 95 || len(d.Reasons) < 2 {
		t.Errorf("decision = %+v", d)
	}
}
