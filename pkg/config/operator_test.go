package config

import "testing"

func TestOperatorExportsNamesWhatTheCommandsRead(t *testing.T) {
	c := Config{Endpoint: "http://127.0.0.1:4566", Region: "us-east-1", Table: "aijobs-dev-jobs",
		QueueURL: "http://127.0.0.1:4566/000000000000/aijobs-dev-jobs", DLQURL: "http://127.0.0.1:4566/000000000000/aijobs-dev-dlq"}
	want := "export AWS_ENDPOINT_URL=http://127.0.0.1:4566 AWS_REGION=us-east-1 AIJOBS_TABLE=aijobs-dev-jobs" +
		" AIJOBS_QUEUE_URL=http://127.0.0.1:4566/000000000000/aijobs-dev-jobs AIJOBS_DLQ_URL=http://127.0.0.1:4566/000000000000/aijobs-dev-dlq"
	if got := OperatorExports(c); got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
	// AWS itself: no endpoint to name; odd characters are quoted for the shell.
	c = Config{Region: "eu-west-1", Table: "it's $HOME"}
	if got, want := OperatorExports(c), `export AWS_REGION=eu-west-1 AIJOBS_TABLE='it'\''s $HOME'`; got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
}
