package bench

import (
	"fmt"
	"testing"

	"github.com/aijobs/aijobs/pkg/app"
)

// What a function writes to its logger and its EMF output is counted
// apart; the setup's bytes are forgotten by reset.
func TestOutputCountsWhatTheFunctionWrites(t *testing.T) {
	var o output
	log := app.LoggerTo(&o.stderr, "info")
	log.Info("setup line")
	if o.written().Stderr == 0 {
		t.Fatal("the logger's line was not counted")
	}
	o.reset()
	fmt.Fprint(&o.stderr, "0123456789")
	fmt.Fprint(&o.stdout, "01234")
	if got := o.written(); got != (Written{Stderr: 10, Stdout: 5}) || got.Total() != 15 {
		t.Fatalf("counted %+v, want 10 B of logs and 5 of EMF", got)
	}
}
