package main

import (
	"context"
	"io"
	"os"
	"os/exec"
	"runtime"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"

	"github.com/aijobs/aijobs/pkg/client"
)

// env is everything the CLI takes from the process, so tests can run it
// whole: streams, whether they are terminals, the environment, and the
// network and clock seams of the client.
type env struct {
	stdin          io.Reader
	stdout, stderr io.Writer
	// stdinTTY and stdoutTTY say whether the streams are terminals: a
	// terminal gets tables and a progress bar, a pipe gets JSON and no
	// bar.
	stdinTTY, stdoutTTY bool
	getenv              func(string) string
	// loadAWS loads the shared AWS configuration (profile, SSO, env)
	// for --sigv4.
	loadAWS func(ctx context.Context, region string) (aws.Config, error)
	// openURL opens a URL in the person's browser (console --open). Its
	// argument is on a command line any local user can read: the
	// console hands it a one-time code, never its access token.
	openURL func(string) error
	// http, now and sleep go to client.Config; nil means its defaults.
	http  client.Doer
	now   func() time.Time
	sleep func(context.Context, time.Duration) error
}

// systemEnv is the real process.
func systemEnv() *env {
	return &env{
		stdin: os.Stdin, stdout: os.Stdout, stderr: os.Stderr,
		stdinTTY: isTerminal(os.Stdin), stdoutTTY: isTerminal(os.Stdout),
		getenv: os.Getenv, loadAWS: loadAWS, openURL: openBrowser,
	}
}

// openBrowser hands u to the desktop's opener, as Jupyter does; it does
// not wait for the browser.
func openBrowser(u string) error {
	name := "xdg-open"
	switch runtime.GOOS {
	case "darwin":
		name = "open"
	case "windows":
		return exec.Command("rundll32", "url.dll,FileProtocolHandler", u).Start()
	}
	return exec.Command(name, u).Start()
}

// isTerminal reports whether f is a character device (a terminal), the
// standard library's way, without a terminal module.
func isTerminal(f *os.File) bool {
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}

func loadAWS(ctx context.Context, region string) (aws.Config, error) {
	var opts []func(*config.LoadOptions) error
	if region != "" {
		opts = append(opts, config.WithRegion(region))
	}
	return config.LoadDefaultConfig(ctx, opts...)
}
