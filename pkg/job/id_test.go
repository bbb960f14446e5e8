package job_test

import (
	"strings"
	"testing"

	"github.com/aijobs/aijobs/pkg/job"
)

func TestNewID(t *testing.T) {
	a := job.NewID("tenant-a", "key-1")
	if a != job.NewID("tenant-a", "key-1") {
		t.Error("NewID is not deterministic")
	}
	if len(a) != job.IDLength || !strings.HasPrefix(a, "job_") {
		t.Errorf("NewID = %q: want job_ and %d characters", a, job.IDLength)
	}
	different := []struct{ tenant, key string }{
		{"tenant-b", "key-1"}, // another tenant, same key
		{"tenant-a", "key-2"},
		{"tenant-", "akey-1"}, // the separator keeps (tenant, key) apart
		{"tenant-akey-1", ""},
		{"", "tenant-akey-1"},
	}
	for _, d := range different {
		if id := job.NewID(d.tenant, d.key); id == a {
			t.Errorf("NewID(%q, %q) = NewID(tenant-a, key-1) = %s", d.tenant, d.key, id)
		}
	}
}

func TestValidID(t *testing.T) {
	seen := map[string]bool{}
	for _, tenant := range []string{"", "t", "arn:aws:iam::123456789012:user/x", "日本"} {
		for _, key := range []string{"", "k", strings.Repeat("x", 255) /* the longest Idempotency-Key */, "a b~!"} {
			id := job.NewID(tenant, key)
			if !job.ValidID(id) {
				t.Errorf("ValidID(NewID(%q, %q) = %q) = false", tenant, key, id)
			}
			if seen[id] {
				t.Errorf("duplicate id %s", id)
			}
			seen[id] = true
		}
	}
	good := job.NewID("t", "k")
	for _, s := range []string{
		"",
		"job_",
		good[:len(good)-1],                 // short
		good + "a",                         // long
		"job_" + strings.Repeat("a", 1000), // oversized
		strings.ToUpper(good[:4]) + good[4:],
		good[:4] + strings.ToUpper(good[4:]),
		"jab_" + good[4:],
		"jobs" + good[4:],
		good[:4] + "0" + good[5:], // 0, 1, 8, 9 are not in the alphabet
		good[:4] + "1" + good[5:],
		good[:4] + "8" + good[5:],
		good[:4] + "=" + good[5:],
		good[:4] + "/" + good[5:],
		good[:4] + "é" + good[6:], // right byte length, not ASCII
		"../../etc/passwd",
	} {
		if job.ValidID(s) {
			t.Errorf("ValidID(%q) = true", s)
		}
	}
}
