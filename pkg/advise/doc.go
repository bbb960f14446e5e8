// Package advise decides whether a model call should be served synchronously
// (answer on the open request, streaming the tokens) or as an asynchronous
// job (a job record, then a poll or a callback). It is a pure function of
// three facts, so the decision can be argued over, tested and printed with
// its reasons instead of being folklore:
//
//   - the shortest timeout of any hop on the request path (API Gateway REST
//     API 29 s, API Gateway HTTP API 30 s, an Application Load Balancer's
//     default idle timeout 60 s, or an explicit duration);
//   - the operation's p99 latency INCLUDING its retries and fallback rungs
//     (a retry is part of the request's latency: the user waits through it);
//   - whether the work outlives the user's session (nobody awaits the
//     answer: a batch, an e-mail, a webhook) or is awaited.
//
// The rule, in order:
//
//  1. Work that outlives the session is asynchronous, whatever its latency:
//     nothing should hold a connection open for a result nobody waits on,
//     and a job record survives a closed tab.
//  2. Awaited work whose p99 with retries does not fit under the shortest
//     hop with headroom (p99 <= HeadroomPercent % of the hop) is
//     asynchronous: the slowest requests would be cut by that hop, the cut
//     call is still billed by the model provider, and the client's retry
//     pays for it a second time.
//  3. Awaited work that fits is synchronous, streaming the tokens:
//     streaming keeps the connection busy and shows progress, and no job
//     record is needed.
//
// Plan computes the p99-with-retries figure from a per-attempt p99 and the
// retry and fallback plan when it has not been measured end to end.
package advise
