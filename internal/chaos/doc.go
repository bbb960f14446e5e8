// Package chaos is the chaos harness (docs/chaos.md): it runs the real
// engine under faults in every dependency at once and checks, at the end,
// that aijobs kept its two promises: a job is never generated twice, and
// every accepted job ends with every cent it spent on its record.
//
// What runs (Run): kumo for AWS; the real API handler (pkg/app) behind
// the dev server's gateway, in the harness process; two worker processes
// (Worker, the `aijobs-chaos worker` command: the real worker handler
// under the dev server's poller) with clocks a second behind and a
// second ahead; the real reconciler; an OpenAI-compatible model server
// (ModelServer), called through the real provider, which bills each job
// as a provider's invoice would, on chat completions and on the Responses
// API's background shape (responses.go: the "background" route, whose
// generations a worker taking a killed worker's job over resumes instead
// of paying again) and in the cost lanes the "plain" route's rung offers
// (service_tier: flex slower, and refused for want of capacity now and
// then, unbilled; priority faster, or served and billed at standard past
// its ramp limit; each billed at the price of the lane that served it),
// with cached prompt tokens and reasoning tokens in its usage, the
// cached ones billed at the cached input price (usage.go); and
// one client per job (create with an Idempotency-Key, poll with
// If-None-Match, cancel some, list, probe other tenants' jobs). The
// engine's timings are production's scaled down about ten times; the
// reconciler keeps its minimum period, so a lost message takes as long
// to recover as in production.
//
// What goes wrong is drawn from a Seed (Schedule): each job's plan, each
// model request's fault, each AWS call's fault and the worker kills, so
// one seed replays one plan (not the goroutines' interleaving). AWS faults
// (AWSFaults) are the services' own JSON error answers, put in place of
// the transport's answer by SDK middleware, on every DynamoDB, SQS and S3
// call of the API and the workers: throttles, 5xx, stalls, hung requests,
// and requests that land with their answer lost. Model faults stall the
// headers, cut a stream, trickle tokens, answer 429 or 529/503, or answer
// past the client's timeout. Workers are SIGKILLed mid-call and restarted,
// messages duplicated, and the API killed between a create's PutItem and
// its SendMessage. The fault profiles (Profiles) set the AWS rates:
// "default" (2% throttled, 1% 5xx, 0.6% stalled, 0.6% hung, 1% answer
// lost) and "harsh" (8%, 7%, 30%, 1%, 10%: issue W's new user); the model
// rates are the same in both.
//
// The run then checks seven invariants (check.go), each a count of cases
// checked and failed:
//
//  1. every accepted job is terminal, or recoverable within the
//     reconciler's bound;
//  2. every succeeded job has exactly one successful generation (one its
//     client read whole);
//  3. a finished job holds nothing, and its cost is the model's bill
//     exactly, or above it and marked estimated;
//  4. no job's cost exceeds its budget, on the record or on the bill;
//  5. each job's poller saw version and updated_at only move forward;
//  6. no tenant saw another tenant's job;
//  7. no tenant's recorded spend in a period, nor the bill for its jobs,
//     exceeds its spend limit (spend.go: three tenants run at limits).
//
// For comparison, the same schedule (jobs, model faults, AWS faults on
// its SQS client, duplicates, crashes, lost sends) is run against a
// Baseline: a plain SQS consumer with no claim, lease or heartbeat, which
// deletes a message after a successful call (and calls chat completions
// on the background route too: it has no id to come back to). The Report
// gives billed generations per succeeded job for both, overall, for the
// background route against the others, and by route, the generations
// resumed, each lane's succeeded jobs (result_lane), requests, capacity
// refusals and savings (saved_nc against the bill's), and each failing
// job's plan, record, billed requests and faults.
//
// To run it:
//
//	make chaos                                 # 500 jobs, 2 minutes of load, a new seed (printed)
//	make chaos SEED=42 JOBS=5000 DURATION=15m  # replay a seed, or a longer run
//	make chaos PROFILE=harsh JOBS=300          # the harsh profile
//	make test-chaos-harsh                      # the harsh short run CI adds (-tags chaosharsh)
//
// `make test` includes the default profile's short seeded run
// (TestShortChaosRun). The command exits 0 when every invariant held, 1
// when one broke, 2 when the run itself could not run.
package chaos
