package job_test

import (
	"testing"

	"github.com/aijobs/aijobs/pkg/job"
)

// A payload is the body it was made from, and no other: not a body cut
// short, nor one of the same length with a byte changed.
func TestAPayloadChecksItsSizeAndDigest(t *testing.T) {
	body := []byte(`{"messages":[{"role":"user","content":"hello"}]}`)
	p := job.PayloadOf("inputs/j/h", body)
	if p.Size != int64(len(body)) || len(p.SHA256) != len("sha256:")+64 {
		t.Fatalf("payload %+v", p)
	}
	if err := p.Check(body); err != nil {
		t.Fatalf("its own body: %v", err)
	}
	changed := append([]byte(nil), body...)
	changed[10] ^= 1
	for name, b := range map[string][]byte{"cut": body[:len(body)-1], "changed": changed, "empty": nil} {
		if p.Check(b) == nil {
			t.Errorf("%s body passed the check", name)
		}
	}
}
