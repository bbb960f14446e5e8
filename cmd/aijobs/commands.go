package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
)

// command is one subcommand: its name, how it is called, a one-line
// summary for the top-level help, and what it does.
type command struct {
	name     string
	synopsis string // positional arguments, for the usage line
	summary  string
	run      func(ctx context.Context, c *cli, args []string) error
}

// commands is the command table, in the order of the help.
var commands = []command{
	{"submit", submitSynopsis, "create a job (POST /jobs) and optionally wait for it", runSubmit},
	{"get", "ID", "show a job (GET /jobs/{id})", runGet},
	{"wait", "ID", "poll a job until it ends, with a progress bar on a terminal", runWait},
	{"cancel", "ID", "cancel a job (POST /jobs/{id}/cancel)", runCancel},
	{"list", "", "list your jobs (GET /jobs), following cursors with --all", runList},
	{"spend", "", "your spend against your limits per period (GET /spend)", runSpend},
	{"advise", "--p99 DURATION (--awaited | --outlives)", "decide between a synchronous call and a job", runAdvise},

	// Operator commands: they read and write DynamoDB and SQS directly
	// with AWS credentials (the stack's operator policy), not the API.
	{"failures", "[--class C] [--since T] [--until T]", "failed and abandoned jobs by class and input, with their cost", runFailures},
	{"replay", "--from dlq|failures", "send jobs back through the claim path (succeeded ones are skipped)", runReplay},
	{"quarantine", "list|lift [flags]", "list the inputs refused as known to fail, and lift a quarantine", runQuarantine},
	{"console", "[--listen 127.0.0.1:9090]", "serve the operator console: web pages over the table and queues", runConsole},
}

// cli is one invocation: the process environment and the global flags.
type cli struct {
	env *env
	g   globals
	// help prints the running command's --help (set by flagSet).
	help func()
}

// errHelpShown ends an invocation that printed its help: exit 0.
var errHelpShown = errors.New("help shown")

// run is the whole CLI: global flags, then a command and its flags.
func run(ctx context.Context, args []string, e *env) error {
	c := &cli{env: e}
	top := flag.NewFlagSet("aijobs", flag.ContinueOnError)
	top.SetOutput(io.Discard)
	c.g.register(top)
	err := top.Parse(args)
	switch {
	case errors.Is(err, flag.ErrHelp):
		c.topUsage(e.stdout)
		return nil
	case err != nil:
		return usageErrorf("%v (see aijobs --help)", err)
	case top.NArg() == 0:
		return usageErrorf("no command given (see aijobs --help)")
	}
	name := top.Arg(0)
	if name == "help" {
		c.topUsage(e.stdout)
		return nil
	}
	for _, cmd := range commands {
		if cmd.name == name {
			err := cmd.run(ctx, c, top.Args()[1:])
			if errors.Is(err, errHelpShown) {
				return nil
			}
			return err
		}
	}
	return usageErrorf("unknown command %q (see aijobs --help)", name)
}

func (c *cli) topUsage(w io.Writer) {
	fmt.Fprint(w, `aijobs: the operator CLI of aijobs (the HTTP API, and the jobs table and queues)

Usage:
  aijobs [global flags] COMMAND [flags] [arguments]

Commands:
`)
	for _, cmd := range commands {
		fmt.Fprintf(w, "  %-10s %s\n", cmd.name, cmd.summary)
	}
	fmt.Fprint(w, "\nGlobal flags (also accepted after the command):\n")
	fs := flag.NewFlagSet("aijobs", flag.ContinueOnError)
	new(globals).register(fs)
	printFlags(w, fs, isGlobal)
	fmt.Fprint(w, "\n"+exitCodesHelp+"\nRun aijobs COMMAND --help for a command's flags. See docs/cli.md.\n")
}
