package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/aijobs/aijobs/pkg/job"
)

const quarantineAbout = `The quarantine: inputs (a tenant's input hash on a route) that failed in a
way no retry can change (context_length_exceeded, content_filtered,
invalid_request). A create of such an input is refused with 422
input_quarantined until its quarantine expires (AIJOBS_QUARANTINE_FOR) or
is lifted. Subcommands:

  list   the quarantines in force, of one tenant (--tenant) or of all
  lift   end one quarantine (--tenant, --route, --input-hash)

Reads and writes the quarantine table directly with your AWS credentials
(the stack's operator policy), not the HTTP API. Run aijobs quarantine
list --help or aijobs quarantine lift --help for their flags.`

const quarantineListAbout = `The quarantines in force, newest first: of one tenant (--tenant, one Query
of the quarantine table) or of every tenant (a Scan of the table, which
holds only quarantines). Each names the job whose failure put its input
there (aijobs get, or the console's job page, says why).`

const quarantineLiftAbout = `End one quarantine: creates of the input are accepted again (a job of it that
fails the same way puts it back). The key is what quarantine list prints:
the tenant (with its namespace, such as jwt:), the route and the input
hash. Lifting an input that is not quarantined changes nothing (exit 0).`

// quarantineRow is one quarantine in list's JSON, and in lift's.
type quarantineRow struct {
	Tenant    string         `json:"tenant"`
	Route     string         `json:"route"`
	InputHash string         `json:"input_hash"`
	Class     job.ErrorClass `json:"error_class"`
	JobID     string         `json:"job_id"`
	Since     time.Time      `json:"since"`
	Until     time.Time      `json:"until"`
}

// liftReport is lift's JSON: the key, and the quarantine it ended, if one
// was in force.
type liftReport struct {
	Tenant     string         `json:"tenant"`
	Route      string         `json:"route"`
	InputHash  string         `json:"input_hash"`
	Lifted     bool           `json:"lifted"`
	Quarantine *quarantineRow `json:"quarantine,omitempty"`
}

// runQuarantine dispatches to list or lift; global flags may come before
// the subcommand.
func runQuarantine(ctx context.Context, c *cli, args []string) error {
	fs := c.flagSet("quarantine", "list|lift [flags]", quarantineAbout)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			c.help()
			return errHelpShown
		}
		return usageErrorf("quarantine: %v (see aijobs quarantine --help)", err)
	}
	c.g.merge(fs)
	switch sub := fs.Arg(0); sub {
	case "list":
		return runQuarantineList(ctx, c, fs.Args()[1:])
	case "lift":
		return runQuarantineLift(ctx, c, fs.Args()[1:])
	case "":
		return usageErrorf("quarantine: want a subcommand, list or lift (see aijobs quarantine --help)")
	default:
		return usageErrorf("quarantine: unknown subcommand %q: want list or lift (see aijobs quarantine --help)", sub)
	}
}

// runQuarantineList prints the quarantines in force.
func runQuarantineList(ctx context.Context, c *cli, args []string) error {
	fs := c.flagSet("quarantine list", "", quarantineListAbout)
	var af awsFlags
	af.registerQuarantine(fs)
	tenant := fs.String("tenant", "", "only this `tenant`'s quarantines, with its namespace such as jwt: (default: every tenant's)")
	if _, err := c.parse(fs, args, 0); err != nil {
		return err
	}
	format, op, err := c.connectOperator(ctx, af)
	if err != nil {
		return err
	}
	qs, err := op.quarantines.List(ctx, *tenant, c.clock())
	if err != nil {
		return fmt.Errorf("quarantine list: %w", err)
	}
	rows := make([]quarantineRow, 0, len(qs))
	for _, q := range qs {
		rows = append(rows, rowOf(q))
	}
	if format == "json" {
		return printJSON(c.env.stdout, rows)
	}
	return printQuarantines(c.env.stdout, rows)
}

// runQuarantineLift ends one quarantine. It reads the tenant's
// quarantines first (a Query, which the operator policy grants; GetItem
// it does not) to say what it lifted.
func runQuarantineLift(ctx context.Context, c *cli, args []string) error {
	fs := c.flagSet("quarantine lift", "--tenant T --route R --input-hash H", quarantineLiftAbout)
	var af awsFlags
	af.registerQuarantine(fs)
	var k job.QuarantineKey
	fs.StringVar(&k.Tenant, "tenant", "", "the quarantine's `tenant`, with its namespace, as quarantine list prints it (required)")
	fs.StringVar(&k.Model, "route", "", "the quarantine's `route` (model) (required)")
	fs.StringVar(&k.InputHash, "input-hash", "", "the quarantined input's `hash`, sha256:<hex> (required)")
	if _, err := c.parse(fs, args, 0); err != nil {
		return err
	}
	if err := checkLiftKey(k); err != nil {
		return err
	}
	format, op, err := c.connectOperator(ctx, af)
	if err != nil {
		return err
	}
	qs, err := op.quarantines.List(ctx, k.Tenant, c.clock())
	if err != nil {
		return fmt.Errorf("quarantine lift: %w", err)
	}
	out := liftReport{Tenant: k.Tenant, Route: k.Model, InputHash: k.InputHash}
	for _, q := range qs {
		if q.Key() == k {
			row := rowOf(q)
			out.Lifted, out.Quarantine = true, &row
		}
	}
	// Lifted or not, the delete runs: an expired item TTL has not yet
	// removed goes too, and a second lift is the first one's no-op.
	if err := op.quarantines.Lift(ctx, k); err != nil {
		return fmt.Errorf("quarantine lift: %w", err)
	}
	if format == "json" {
		return printJSON(c.env.stdout, out)
	}
	return printLift(c.env.stdout, out)
}

// checkLiftKey refuses a lift that names no quarantine, before any AWS
// call.
func checkLiftKey(k job.QuarantineKey) error {
	var missing []string
	for _, f := range []struct{ name, v string }{{"--tenant", k.Tenant}, {"--route", k.Model}, {"--input-hash", k.InputHash}} {
		if strings.TrimSpace(f.v) == "" {
			missing = append(missing, f.name)
		}
	}
	if len(missing) > 0 {
		return usageErrorf("quarantine lift: missing %s: --tenant, --route and --input-hash name the quarantine, as quarantine list prints it",
			strings.Join(missing, ", "))
	}
	if !job.IsInputHash(k.InputHash) {
		return usageErrorf("quarantine lift: --input-hash %q: want sha256:<64 hex digits>, as quarantine list prints it", k.InputHash)
	}
	return nil
}

func rowOf(q job.Quarantine) quarantineRow {
	return quarantineRow{Tenant: q.Tenant, Route: q.Model, InputHash: q.InputHash, Class: q.Class, JobID: q.JobID, Since: q.At, Until: q.Until}
}

func printQuarantines(w io.Writer, rows []quarantineRow) error {
	fmt.Fprintf(w, "%d quarantines in force\n", len(rows))
	if len(rows) == 0 {
		return nil
	}
	t := newTable(w)
	t.row("TENANT", "ROUTE", "INPUT_HASH", "ERROR_CLASS", "JOB_ID", "SINCE", "UNTIL")
	for _, r := range rows {
		t.row(r.Tenant, r.Route, r.InputHash, string(r.Class), r.JobID, stamp(r.Since), stamp(r.Until))
	}
	return t.flush()
}

func printLift(w io.Writer, r liftReport) error {
	if !r.Lifted {
		_, err := fmt.Fprintf(w, "no quarantine in force for tenant %s, route %s, input %s: nothing to lift (tenants carry their namespace, such as jwt:; see aijobs quarantine list)\n",
			cell(r.Tenant), cell(r.Route), cell(r.InputHash))
		return err
	}
	q := r.Quarantine
	_, err := fmt.Fprintf(w, "lifted the quarantine of tenant %s, route %s, input %s (%s since %s, job %s, until %s): creates of it are accepted again\n",
		cell(r.Tenant), cell(r.Route), cell(r.InputHash), q.Class, stamp(q.Since), q.JobID, stamp(q.Until))
	return err
}
