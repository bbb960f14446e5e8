package bench

import (
	"strings"
	"testing"

	"github.com/aijobs/aijobs/pkg/devserver"
)

// The log table has a column per function stream some run wrote to (none
// for one nobody wrote to), bytes per job, and the functions' lines
// priced; the $ table has the functions' lines as their own line.
func TestLogReportShowsBytesPerJobByFunctionStream(t *testing.T) {
	plain := Result{Jobs: 100, API: devserver.Usage{Invocations: 200}, Worker: devserver.Usage{Invocations: 50},
		Written: map[string]Written{"api": {Stderr: 31_300}, "worker": {Stderr: 68_300, Stdout: 51_900}, "reconciler": {}}}
	hooked := plain
	hooked.NotifierDeliver = devserver.Usage{Invocations: 100}
	hooked.Written = map[string]Written{"api": {Stderr: 31_300}, "worker": {Stderr: 68_300, Stdout: 51_900}, "notifier": {Stdout: 53_700}}
	got := LogReport([]string{"plain", "hooked"}, []Result{plain, hooked})
	for _, want := range []string{
		"| bytes per job | api logs | worker logs | worker EMF | notifier EMF | **functions' total** |",
		// 313 + 683 + 519 = 1515 B per job; 2.5 invocations x 350 B
		"| plain | 313 | 683 | 519 | 0 | **1515** | 875 | 0.76 |",
		// + 537; 3.5 invocations x 350 B
		"| hooked | 313 | 683 | 519 | 537 | **2052** | 1225 | 1.03 |",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("log report lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "reconciler") || strings.Contains(got, "api EMF") {
		t.Errorf("a column for a stream nobody wrote to:\n%s", got)
	}
	cost := CostReport([]string{"plain"}, []Result{plain})
	if want := "| CloudWatch Logs: the functions' log lines and EMF metrics (measured) | 0.76 |"; !strings.Contains(cost, want) {
		t.Errorf("$ table lacks %q:\n%s", want, cost)
	}
}
