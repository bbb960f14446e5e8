package config

import (
	"strings"
)

// OperatorExports is the shell line that points the operator commands
// (aijobs failures, replay, advise, console) at the deployment c
// describes: its endpoint, region, table and queues, in the variables
// those commands read. The dev server prints it in its banner, because
// without AWS_ENDPOINT_URL the commands go to AWS's credential chain and
// fail with an instance metadata error a developer cannot place
// (docs/cli.md, "Next to make dev").
func OperatorExports(c Config) string {
	vars := []struct{ name, value string }{
		{"AWS_ENDPOINT_URL", c.Endpoint}, {"AWS_REGION", c.Region}, {"AIJOBS_TABLE", c.Table},
		{"AIJOBS_QUEUE_URL", c.QueueURL}, {"AIJOBS_DLQ_URL", c.DLQURL},
	}
	var b strings.Builder
	b.WriteString("export")
	for _, v := range vars {
		if v.value != "" {
			b.WriteString(" " + v.name + "=" + shellQuote(v.value))
		}
	}
	return b.String()
}

// shellQuote leaves a word of safe characters alone (every URL and name
// the stack makes) and single-quotes anything else.
func shellQuote(s string) string {
	safe := func(r rune) bool {
		return r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_./:@%+=,", r)
	}
	if strings.IndexFunc(s, func(r rune) bool { return !safe(r) }) < 0 {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
