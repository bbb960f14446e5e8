package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/aijobs/aijobs/pkg/client"
)

// Exit codes. Scripts branch on them, so they never change meaning.
const (
	exitOK          = 0
	exitJobFailed   = 1 // the job ended failed
	exitUsage       = 2 // bad flags or arguments, missing endpoint, no AWS credentials
	exitAbandoned   = 3 // the job ended abandoned (cancelled, deadline, budget)
	exitAPI         = 4 // the API answered an error (problem code on stderr)
	exitNetwork     = 5 // no answer from the API after the retries
	exitTimeout     = 6 // wait --timeout passed before the job ended
	exitInterrupted = 130
)

// exitCodesHelp is the exit code table of every --help.
const exitCodesHelp = `Exit codes:
  0  success (wait, submit --wait: the job succeeded)
  1  the job failed
  2  usage or configuration error
  3  the job was abandoned (cancelled, past its deadline, out of budget)
  4  API error: a 4xx/5xx answer (its problem code is printed) or an unreadable answer
  5  network error: no answer after the retries
  6  wait timed out (--timeout)
`

// exitError carries its exit code and a one-line message.
type exitError struct {
	code int
	msg  string
}

func (e *exitError) Error() string { return e.msg }

func usageErrorf(format string, args ...any) error {
	return &exitError{code: exitUsage, msg: fmt.Sprintf(format, args...)}
}

// codeOf is the exit code of what run returned.
func codeOf(err error) int {
	var (
		ee *exitError
		ae *client.Error
		ne *client.NetworkError
	)
	switch {
	case err == nil:
		return exitOK
	case errors.As(err, &ee):
		return ee.code
	case errors.Is(err, context.Canceled):
		return exitInterrupted
	case errors.As(err, &ae):
		return exitAPI
	case errors.As(err, &ne):
		return exitNetwork
	}
	return exitAPI
}

// report writes err as one line on w and answers its exit code. An API
// error shows its problem code first, so it can be grepped. Nothing here
// can hold a secret: errors never carry the token or AWS credentials.
func report(w io.Writer, err error) int {
	code := codeOf(err)
	if err == nil {
		return code
	}
	var (
		ae *client.Error
		ne *client.NetworkError
	)
	msg := strings.TrimPrefix(err.Error(), "aijobs API: ")
	switch {
	case errors.As(err, &ae):
		msg = problemLine(ae)
	case errors.As(err, &ne):
		msg = fmt.Sprintf("network error: %s %s: no answer after %d tries: %v", ne.Method, ne.Path, ne.Tries, ne.Err)
	}
	if code == exitInterrupted {
		msg = "interrupted"
	}
	fmt.Fprintln(w, "aijobs: "+oneLine(msg))
	return code
}

// problemLine is "<code> (<status>): <detail> (field <field>)"; an answer
// that is not a problem (API Gateway's own 403, 429, 504) shows
// "http_<status>" in place of the code.
func problemLine(e *client.Error) string {
	code := e.Code
	if code == "" {
		code = fmt.Sprintf("http_%d", e.Status)
	}
	s := fmt.Sprintf("%s (%d)", code, e.Status)
	switch {
	case e.Detail != "":
		s += ": " + e.Detail
	case e.Title != "":
		s += ": " + e.Title
	}
	if e.Field != "" {
		s += " (field " + e.Field + ")"
	}
	return s
}

func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}
