package batchtest

import (
	"fmt"
	"testing"
)

func ids(page []*Batch[int]) []string {
	var out []string
	for _, b := range page {
		out = append(out, b.ID)
	}
	return out
}

func TestPagesRunNewestFirstFromAfter(t *testing.T) {
	var s Batches[int]
	for i := 1; i <= 5; i++ {
		s.Add(fmt.Sprint("b", i), i)
	}
	for _, c := range []struct {
		after string
		limit int
		want  string
		more  bool
	}{
		{"", 2, "[b5 b4]", true},
		{"b4", 2, "[b3 b2]", true},
		{"b3", 2, "[b2 b1]", false},
		{"b1", 2, "[]", false},
		{"nothing", 5, "[b5 b4 b3 b2 b1]", false},
	} {
		page, more := s.Page(c.after, c.limit)
		if got := fmt.Sprint(ids(page)); got != c.want || more != c.more {
			t.Errorf("Page(%q, %d) = %s more %v, want %s more %v", c.after, c.limit, got, more, c.want, c.more)
		}
	}
}

func TestABatchRunsOnceAfterItsPolls(t *testing.T) {
	var s Batches[int]
	b := s.Add("b1", 0)
	var due []bool
	for range 4 {
		due = append(due, b.Read(2))
	}
	if fmt.Sprint(due) != "[false false true false]" || !b.Ran() {
		t.Fatalf("reads due %v, ran %v: want only the third read due", due, b.Ran())
	}
	b.Unrun()
	if !b.Read(2) {
		t.Error("a run undone is not due again on the next read")
	}
}

func TestAnItemExpiresOnlyTheFirstTime(t *testing.T) {
	var s Batches[int]
	if !s.ExpireOnce("a") || s.ExpireOnce("a") || !s.ExpireOnce("b") {
		t.Error("ExpireOnce is not true exactly the first time per item")
	}
	s.Generate("a")
	s.Generate("a")
	if s.Generated("a") != 2 || s.Generated("b") != 0 {
		t.Errorf("generated a %d, b %d: want 2, 0", s.Generated("a"), s.Generated("b"))
	}
}

func TestCreateFaultsAreCountedDown(t *testing.T) {
	var s Batches[int]
	s.LoseCreates(1)
	s.RefuseCreates(2)
	got := fmt.Sprint(s.Lost(), s.Lost(), s.Refused(), s.Refused(), s.Refused())
	if got != "true false true true false" {
		t.Errorf("lost, lost, refused ×3 = %s", got)
	}
}

func TestMarkersReadOnlyTheirProvider(t *testing.T) {
	m := NewMarkers("openai", `status=(\d{3})`)
	sc := m.Read("hi [[openai:status=503]] [[openai:nousage]] [[anthropic:expire]]")
	if sc != (Script{Fail: "503", NoUsage: true}) {
		t.Errorf("script %+v", sc)
	}
	if sc := m.Read("[[openai:status=abc]] [[openai:expire]]"); sc != (Script{Expire: true}) {
		t.Errorf("a malformed failing marker read as %+v", sc)
	}
}

func TestLimitDefaultsOutsideItsRange(t *testing.T) {
	for q, want := range map[string]int{"": 20, "0": 20, "7": 7, "100": 100, "101": 20, "x": 20} {
		if got := Limit(q, 100); got != want {
			t.Errorf("Limit(%q, 100) = %d, want %d", q, got, want)
		}
	}
}
