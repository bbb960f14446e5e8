package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/aijobs/aijobs/pkg/api"
	"github.com/aijobs/aijobs/pkg/client"
	"github.com/aijobs/aijobs/pkg/job"
	"github.com/aijobs/aijobs/pkg/wire"
)

const submitAbout = `Create a job (POST /jobs) under an idempotency key. The body is a create
request ({"model":..., "input":{"messages":[...],"max_tokens":N},
"deadline_seconds":..., "budget_cents":..., "max_attempts":..., "metadata":{...}})
read from --body (- for stdin) or from stdin when it is piped, or built from
the prompt (TEXT or --prompt) and the files given with --file: each file a
content part of the user message beside the prompt, an image (PNG, JPEG,
WebP, GIF) or a document (PDF, .txt) by its bytes. An input too large for a
create body goes through an upload (POST /uploads) by itself. The option
flags override the body's fields, the input's
sampling and reasoning options (--top-p, --stop, --seed, --reasoning-effort,
--thinking-budget) and the answer's JSON Schema (--schema) included.

The same key with the same body shows the job it created before (noted on
stderr as a repeat); the same key with another body is
idempotency_key_reused (exit 4). Network errors and 5xx answers are retried
with the same key, which never creates a second job.

With --wait it then waits like "aijobs wait" and exits with the job's outcome.`

// submitFlags are submit's own flags.
type submitFlags struct {
	key, body, prompt, model, budget, metadata string
	files                                      listFlag // content parts (parts.go)
	maxTokens, maxAttempts                     int
	deadline, timeout                          time.Duration
	wait                                       bool
	// The input's sampling and reasoning options (job.Options).
	topP           float64
	stop           listFlag
	seed           int64
	effort         string
	thinkingBudget int
	schema         string // a JSON Schema file: input.response_format (schema.go)
}

// listFlag collects a repeated flag, one value per use (--stop, --file).
type listFlag []string

func (s *listFlag) String() string { return strings.Join(*s, ",") }

func (s *listFlag) Set(v string) error {
	*s = append(*s, v)
	return nil
}

// optionFlags are the flags that set the input's options.
var optionFlags = []string{"top-p", "stop", "seed", "reasoning-effort", "thinking-budget", "schema"}

// runSubmit creates a job and optionally waits for it.
func runSubmit(ctx context.Context, c *cli, args []string) error {
	fs := c.flagSet("submit", submitSynopsis, submitAbout)
	var f submitFlags
	fs.StringVar(&f.key, "key", "", "idempotency key, 1-255 printable ASCII characters (required): reuse it to retry safely")
	fs.StringVar(&f.body, "body", "", "read the create body (JSON) from `PATH`; - reads stdin")
	fs.StringVar(&f.prompt, "prompt", "", "build the input from one user message `TEXT` instead of a body (or give TEXT as the argument)")
	fs.Var(&f.files, "file", "a content part of the prompt's message from the file at `PATH`: a PNG, JPEG, WebP or GIF image, a PDF, or a .txt document; repeat for more")
	fs.IntVar(&f.maxTokens, "max-tokens", 0, "with --prompt: input.max_tokens (default: the server's)")
	fs.StringVar(&f.model, "model", "", "model route (default: the server's default route)")
	fs.StringVar(&f.budget, "budget-cents", "", "budget in `cents`, decimals allowed, e.g. 50 or 0.5 (default: the server's)")
	fs.DurationVar(&f.deadline, "deadline", 0, "deadline from creation, whole seconds, e.g. 15m (default: the server's)")
	fs.IntVar(&f.maxAttempts, "max-attempts", 0, "most attempts the job may make (default: the server's)")
	fs.StringVar(&f.metadata, "metadata", "", "a JSON `object` returned with the job as given")
	fs.Float64Var(&f.topP, "top-p", 0, "input.top_p, from 0 to 1")
	fs.Var(&f.stop, "stop", "a stop `sequence` for input.stop; repeat for up to 4")
	fs.Int64Var(&f.seed, "seed", 0, "input.seed (OpenAI chat models only)")
	fs.StringVar(&f.effort, "reasoning-effort", "", "input.reasoning.effort: low, medium or high (OpenAI's reasoning models)")
	fs.IntVar(&f.thinkingBudget, "thinking-budget", 0, "input.reasoning.budget_tokens, at least 1024 and below max_tokens (Claude's extended thinking)")
	fs.StringVar(&f.schema, "schema", "", "input.response_format: the answer must be JSON the JSON Schema in `PATH` accepts")
	fs.BoolVar(&f.wait, "wait", false, "wait for the job to end; exit with its outcome")
	fs.DurationVar(&f.timeout, "timeout", 0, "with --wait: give up after this long (exit 6)")
	pos, err := c.parseBetween(fs, args, 0, 1)
	if err != nil {
		return err
	}
	set := map[string]bool{}
	fs.Visit(func(fl *flag.Flag) { set[fl.Name] = true })
	if len(pos) == 1 {
		if set["prompt"] {
			return usageErrorf("submit: give the prompt as TEXT or --prompt, not both")
		}
		f.prompt, set["prompt"] = pos[0], true
	}
	req, err := c.createRequest(f, set)
	if err != nil {
		return err
	}
	if set["timeout"] && (!f.wait || f.timeout < 0) {
		return usageErrorf("submit: --timeout goes with --wait and must not be negative")
	}
	format, cl, err := c.connect(ctx)
	if err != nil {
		return err
	}
	v, repeated, err := cl.Submit(ctx, f.key, req)
	if err != nil {
		return err
	}
	if repeated {
		fmt.Fprintf(c.env.stderr, "aijobs: repeated: key %q already created job %s (same body); showing it\n", f.key, v.ID)
	}
	if f.wait {
		return c.await(ctx, cl, v.ID, f.timeout, format)
	}
	return printView(c.env.stdout, format, v)
}

// submitSynopsis is submit's usage line.
const submitSynopsis = "--key KEY ([--file PATH]... TEXT | --prompt TEXT | --body PATH | < body.json)"

// createRequest builds the body from the prompt and files, --body or stdin, then
// applies the option flags that were given. Every mistake is found here,
// before anything is sent: a usage error (exit 2).
func (c *cli) createRequest(f submitFlags, set map[string]bool) (client.CreateBody, error) {
	var req client.CreateBody
	if !wire.ValidKey(f.key) {
		return req, usageErrorf("submit: --key is required: 1 to %d printable ASCII characters", wire.MaxKeyLength)
	}
	switch {
	case set["prompt"] && set["body"]:
		return req, usageErrorf("submit: give a prompt or --body, not both")
	case set["file"] && !set["prompt"]:
		return req, usageErrorf("submit: --file goes with a prompt (TEXT or --prompt): the question about the file")
	case set["prompt"]:
		if f.prompt == "" {
			return req, usageErrorf("submit: the prompt is empty")
		}
		if f.maxTokens < 0 {
			return req, usageErrorf("submit: --max-tokens must be positive")
		}
		req.Input = client.UserPrompt(f.prompt, f.maxTokens)
		if len(f.files) > 0 {
			var err error
			if req.Input, err = promptWithFiles(f.prompt, f.maxTokens, f.files); err != nil {
				return req, err
			}
		}
	default:
		if set["max-tokens"] {
			return req, usageErrorf("submit: --max-tokens goes with a prompt (put max_tokens in the body's input)")
		}
		body, err := c.readBody(f.body)
		if err != nil {
			return req, err
		}
		if req, err = decodeBody(body); err != nil {
			return req, err
		}
	}
	var err error
	if req.Input, err = withOptions(req.Input, f, set); err != nil {
		return req, err
	}
	if set["model"] {
		req.Model = f.model
	}
	if set["budget-cents"] {
		b, err := job.ParseCents(f.budget)
		if err != nil || b <= 0 {
			return req, usageErrorf("submit: --budget-cents %q: want a positive decimal number of cents", f.budget)
		}
		req.BudgetCents = b
	}
	if set["deadline"] {
		if f.deadline < time.Second || f.deadline%time.Second != 0 {
			return req, usageErrorf("submit: --deadline %s: want whole seconds, at least 1s", f.deadline)
		}
		req.DeadlineSeconds = int(f.deadline / time.Second)
	}
	if set["max-attempts"] {
		if f.maxAttempts < 1 {
			return req, usageErrorf("submit: --max-attempts must be at least 1")
		}
		req.MaxAttempts = f.maxAttempts
	}
	if set["metadata"] {
		m := bytes.TrimSpace([]byte(f.metadata))
		if !json.Valid(m) || len(m) == 0 || m[0] != '{' {
			return req, usageErrorf("submit: --metadata must be a JSON object")
		}
		req.Metadata = m
	}
	return req, nil
}

// withOptions is input with the options given as flags set on it, the
// rest of it left as it is; input itself when none was given. The flags'
// bounds are checked here, before sending; the rest is the server's.
func withOptions(input json.RawMessage, f submitFlags, set map[string]bool) (json.RawMessage, error) {
	if !slices.ContainsFunc(optionFlags, func(name string) bool { return set[name] }) {
		return input, nil
	}
	var in job.Input
	dec := json.NewDecoder(bytes.NewReader(input))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&in); err != nil {
		return nil, usageErrorf("submit: the body's input is not a model input: %v", err)
	}
	switch {
	case set["top-p"] && !(f.topP >= 0 && f.topP <= 1):
		return nil, usageErrorf("submit: --top-p must be between 0 and 1")
	case set["stop"] && len(f.stop) > job.MaxStop:
		return nil, usageErrorf("submit: at most %d --stop sequences", job.MaxStop)
	case set["reasoning-effort"] && !slices.Contains(job.Efforts, f.effort):
		return nil, usageErrorf("submit: --reasoning-effort must be one of %s", strings.Join(job.Efforts, ", "))
	}
	if set["top-p"] {
		in.TopP = &f.topP
	}
	if set["stop"] {
		in.Stop = f.stop
	}
	if set["seed"] {
		in.Seed = &f.seed
	}
	if set["schema"] {
		var err error
		if in.ResponseFormat, err = schemaFormat(f.schema); err != nil {
			return nil, err
		}
	}
	if set["reasoning-effort"] || set["thinking-budget"] {
		if in.Reasoning == nil {
			in.Reasoning = &job.Reasoning{}
		}
		if set["reasoning-effort"] {
			in.Reasoning.Effort = f.effort
		}
		if set["thinking-budget"] {
			in.Reasoning.BudgetTokens = f.thinkingBudget
		}
	}
	b, err := job.EncodeJSON(in)
	if err != nil {
		return nil, usageErrorf("submit: encode the input: %v", err)
	}
	return b, nil
}

// readBody reads the create body from a file, or from stdin ("-", or no
// --body with stdin piped). It refuses a body over what an upload takes.
func (c *cli) readBody(path string) ([]byte, error) {
	var r io.Reader
	switch {
	case path == "" && c.env.stdinTTY:
		return nil, usageErrorf("submit: give a prompt, --body, or pipe a body on stdin (see aijobs submit --help)")
	case path == "" || path == "-":
		r = c.env.stdin
	default:
		f, err := os.Open(path)
		if err != nil {
			return nil, usageErrorf("submit: %v", err)
		}
		defer f.Close()
		r = f
	}
	// A body over the API's own limit is sent through an upload
	// (client.Submit), which takes at most MaxUploadBytes of input.
	b, err := io.ReadAll(io.LimitReader(r, api.MaxUploadBytes+1))
	if err != nil {
		return nil, usageErrorf("submit: read the body: %v", err)
	}
	if len(b) > api.MaxUploadBytes {
		return nil, usageErrorf("submit: the body is larger than %d bytes (the largest input an upload takes)", api.MaxUploadBytes)
	}
	return b, nil
}

// decodeBody reads a create body strictly: one JSON object, no unknown
// members (the API would refuse them; this says so before sending).
func decodeBody(b []byte) (client.CreateBody, error) {
	var req client.CreateBody
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil {
		return req, usageErrorf("submit: the body is not a create request: %v", err)
	}
	if dec.More() {
		return req, usageErrorf("submit: the body holds more than one JSON value")
	}
	if len(req.Input) == 0 || string(req.Input) == "null" {
		return req, usageErrorf("submit: the body has no input")
	}
	return req, nil
}
