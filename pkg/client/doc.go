// Package client is a Go client of the aijobs HTTP API (POST /jobs,
// GET /jobs/{id}, POST /jobs/{id}/cancel, GET /jobs, POST /uploads,
// GET /spend), for services that submit slow model calls as jobs and for
// the operator CLI.
//
// It exists so that callers get the protocol right without reading the
// server: the Idempotency-Key on every create (and the same key on every
// retry of it, which is what makes the retry safe), ETag/If-None-Match and
// Retry-After when polling, problem+json answers as a typed *Error to branch
// on by Code, and SigV4 signing for the IAM-authorized API Gateway HTTP API.
//
//	c, err := client.New(client.Config{
//		BaseURL: "http://127.0.0.1:8080",
//		Auth:    client.BearerToken("tenant-a"),
//	})
//	v, repeated, err := c.Submit(ctx, "report-2026-12-02", client.CreateBody{
//		Input: client.UserPrompt("Summarise our Q3 incidents", 256),
//	})
//	v, err = c.Wait(ctx, v.ID, func(v client.View) { log.Println(v.State, v.Progress) })
//
// Retries: every method retries network errors, 429 and 5xx answers a
// bounded number of times (Config.MaxRetries), waiting the answer's
// Retry-After when it gives one. That is safe for each of them: Submit
// re-sends the same Idempotency-Key and body, so a retry finds the job the
// first try created (and re-enqueues it after a 503 enqueue_failed); Get and
// List only read; Cancel is idempotent on the server (an already cancelled
// job answers 200). 4xx answers other than 429 are never retried: the same
// request would get the same answer.
package client
