package model

import "github.com/aijobs/aijobs/pkg/job"

// The estimates below bill a call whose usage the provider never reported.
// They are upper estimates, marked Estimated, so that an attempt whose
// answer was lost is never recorded as free: the prompt at job's
// PromptCeiling (two bytes a token where providers count about four) and
// the output at what the provider may have generated.

// Unanswered is the usage of a call that was sent in full but whose answer
// never came or could not be read. A non-streaming call is billed the
// rung's worst case, the prompt ceiling and every output token it asked
// for (r.MaxTokens, which the worker always sets): the provider finishes
// the generation after the client went away, and bills it. A stream is
// billed the prompt ceiling only: a stream's generation is taken to stop
// when its reader goes away.
//
// A reasoning model (r.reasons) is billed every output token it asked for
// either way: it reasons before its first delta, billed as output, so a
// stream that heard nothing may already owe the whole cap.
func Unanswered(r Request, stream bool) Usage {
	u := Usage{InputTokens: r.ceiling(), Estimated: true}
	if !stream || r.reasons() {
		u.OutputTokens = int64(max(r.MaxTokens, 0))
	}
	return u
}

// Unreported is the usage of a complete non-streamed answer that came
// without its counts (a compatible server or proxy that drops them): the
// prompt ceiling, and the output at the same two bytes a token, never more
// than the r.MaxTokens asked for when it is set.
//
// A reasoning model's answer text leaves its reasoning out: it is
// estimated at every output token asked for.
func Unreported(r Request, output string) Usage {
	out := (int64(len(output)) + 1) / 2
	if r.MaxTokens > 0 {
		out = min(out, int64(r.MaxTokens))
		if r.reasons() {
			out = int64(r.MaxTokens)
		}
	}
	return Usage{InputTokens: r.ceiling(), OutputTokens: out, Estimated: true}
}

// reasons reports whether the call's model reasons before it answers:
// by default (Reasons), or because the job asked it to (a reasoning
// effort, a thinking budget). Either way its reasoning is billed as
// output that no answer text or stream delta shows.
func (r Request) reasons() bool { return r.Reasons || r.Options.Reasoning != nil }

// BatchUnreported is the usage of a batch's answer that came without its
// counts: the output at two bytes a token, estimated. A batch's result
// names its request only by id, so the prompt's share is the collector's
// to add from the job's input (at least its prompt ceiling, as
// Unreported's).
func BatchUnreported(output string) Usage {
	return Usage{OutputTokens: (int64(len(output)) + 1) / 2, Estimated: true}
}

// StreamUsage is the usage of a stream from what it told before it ended:
// input is the server's prompt count (0 when it sent none: the prompt
// ceiling then), output the larger of the content deltas received (a token
// each) and the server's latest output count. It is estimated unless the
// server's final usage arrived (final) and counted the prompt. A reasoning
// model's stream cut before its final usage is estimated at every output
// token asked for: its reasoning came before the deltas and is billed.
func StreamUsage(r Request, input, deltas, output int64, final bool) Usage {
	u := Usage{InputTokens: input, OutputTokens: max(deltas, output), Estimated: !final}
	if !final && r.reasons() {
		u.OutputTokens = max(u.OutputTokens, int64(r.MaxTokens))
	}
	if input <= 0 {
		u.InputTokens, u.Estimated = r.ceiling(), true
	}
	return u
}

// ceiling is the prompt ceiling of r's input: its messages', or its
// texts' when it asks for embeddings.
func (r Request) ceiling() int64 {
	if r.Texts != nil {
		return job.TextsCeiling(r.Texts)
	}
	return job.PromptCeiling(r.Messages)
}
