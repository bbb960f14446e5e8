package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
)

// globals are the flags every command accepts, before or after its name.
type globals struct {
	endpoint string
	token    string
	sigv4    bool
	region   string
	output   string
}

// register adds the global flags to fs, all with empty defaults: the help
// prints defaults, so none may come from a value given elsewhere (a token
// must never be printed); the environment is read after parsing.
func (g *globals) register(fs *flag.FlagSet) {
	fs.StringVar(&g.endpoint, "endpoint", "", "API base URL, e.g. http://127.0.0.1:8080 or the stack's ApiUrl (env AIJOBS_ENDPOINT)")
	fs.StringVar(&g.token, "token", "", "bearer token: the tenant locally, a JWT in AWS (env AIJOBS_TOKEN); never printed")
	fs.BoolVar(&g.sigv4, "sigv4", false, "sign requests with AWS SigV4 (IAM-authorized API) using the AWS config: profile, SSO, env credentials")
	fs.StringVar(&g.region, "region", "", "AWS region for --sigv4 (default: from the AWS config, AWS_REGION)")
	fs.StringVar(&g.output, "output", "", "output format: json or table (default: table on a terminal, json when piped)")
}

// merge copies the global flags set on a command's flag set over those
// given before the command (the later one wins, as with any flag).
func (g *globals) merge(fs *flag.FlagSet) {
	fs.Visit(func(f *flag.Flag) {
		switch f.Name {
		case "endpoint":
			g.endpoint = f.Value.String()
		case "token":
			g.token = f.Value.String()
		case "sigv4":
			g.sigv4 = f.Value.String() == "true"
		case "region":
			g.region = f.Value.String()
		case "output":
			g.output = f.Value.String()
		}
	})
}

// format is the output format: the flag, else table on a terminal and
// JSON when piped (scripts get JSON without asking).
func (c *cli) format() (string, error) {
	switch c.g.output {
	case "json", "table":
		return c.g.output, nil
	case "":
		if c.env.stdoutTTY {
			return "table", nil
		}
		return "json", nil
	}
	return "", usageErrorf("--output %q: want json or table", c.g.output)
}

// flagSet is a command's flag set with the global flags on it, and a
// --help that prints the command's usage and the exit codes.
func (c *cli) flagSet(cmd, synopsis, about string) *flag.FlagSet {
	fs := flag.NewFlagSet(cmd, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {} // the flag package calls it on every error; help is printed by parse
	c.help = func() {
		w := c.env.stdout
		fmt.Fprintf(w, "Usage: aijobs %s [flags] %s\n\n%s\n", cmd, synopsis, strings.TrimSpace(about))
		own := func(name string) bool { return !isGlobal(name) }
		if hasFlags(fs, own) {
			fmt.Fprint(w, "\nFlags:\n")
			printFlags(w, fs, own)
		}
		fmt.Fprint(w, "\nGlobal flags:\n")
		printFlags(w, fs, isGlobal)
		fmt.Fprint(w, "\n"+exitCodesHelp)
	}
	var sub globals // merged into c.g by parse
	sub.register(fs)
	return fs
}

// parse parses flags and positional arguments in any order ("get ID
// --output json" as well as "get --output json ID"), which the flag
// package alone stops at the first argument. want is the number of
// positional arguments the command takes.
func (c *cli) parse(fs *flag.FlagSet, args []string, want int) ([]string, error) {
	return c.parseBetween(fs, args, want, want)
}

// parseBetween is parse for a command whose arguments are optional: from
// least to most of them.
func (c *cli) parseBetween(fs *flag.FlagSet, args []string, least, most int) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				c.help()
				return nil, errHelpShown
			}
			return nil, usageErrorf("%s: %v (see aijobs %s --help)", fs.Name(), err, fs.Name())
		}
		args = fs.Args()
		if len(args) == 0 {
			break
		}
		pos, args = append(pos, args[0]), args[1:]
	}
	c.g.merge(fs)
	switch {
	case least == most && len(pos) != least:
		return nil, usageErrorf("%s: want %d argument(s), got %d (see aijobs %s --help)", fs.Name(), least, len(pos), fs.Name())
	case len(pos) < least || len(pos) > most:
		return nil, usageErrorf("%s: want %d to %d arguments, got %d (see aijobs %s --help)", fs.Name(), least, most, len(pos), fs.Name())
	}
	return pos, nil
}

// printFlags lists the flags of fs that keep passes as --name, which is
// how they are documented (the flag package takes -name and --name alike).
// Defaults are the registered ones, never a value given on this command
// line.
func printFlags(w io.Writer, fs *flag.FlagSet, keep func(name string) bool) {
	fs.VisitAll(func(f *flag.Flag) {
		if !keep(f.Name) {
			return
		}
		name, usage := flag.UnquoteUsage(f)
		line := "  --" + f.Name
		if name != "" {
			line += " " + name
		}
		if f.DefValue != "" && f.DefValue != "false" && f.DefValue != "0" && f.DefValue != "0s" {
			usage += fmt.Sprintf(" (default %s)", f.DefValue)
		}
		fmt.Fprintf(w, "%s\n      %s\n", line, usage)
	})
}

// isGlobal reports whether name is one of the global flags.
func isGlobal(name string) bool {
	switch name {
	case "endpoint", "token", "sigv4", "region", "output":
		return true
	}
	return false
}

func hasFlags(fs *flag.FlagSet, keep func(name string) bool) bool {
	n := 0
	fs.VisitAll(func(f *flag.Flag) {
		if keep(f.Name) {
			n++
		}
	})
	return n > 0
}
