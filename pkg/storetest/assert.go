package storetest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/aijobs/aijobs/pkg/job"
)

// same reports every field of got that differs from want. It walks job.Job
// by reflection, so a field added to the record is compared without anyone
// remembering to add it here. Times compare as instants; ExpiresAt to the
// second, because it is a TTL and DynamoDB keeps TTLs in unix seconds; JSON
// compares byte for byte, because stores return it as given.
func same(t *testing.T, what string, got, want job.Job) {
	t.Helper()
	g, w := reflect.ValueOf(got), reflect.ValueOf(want)
	for i := range g.NumField() {
		name := g.Type().Field(i).Name
		gv, wv := g.Field(i).Interface(), w.Field(i).Interface()
		if !equalField(name, gv, wv) {
			t.Errorf("%s: %s = %s, want %s", what, name, show(gv), show(wv))
		}
	}
}

func equalField(name string, got, want any) bool {
	switch g := got.(type) {
	case time.Time:
		w := want.(time.Time)
		if name == "ExpiresAt" {
			return g.IsZero() == w.IsZero() && g.Unix() == w.Unix()
		}
		return g.Equal(w)
	case json.RawMessage:
		return bytes.Equal(g, want.(json.RawMessage))
	case job.Callback:
		w := want.(job.Callback)
		return g.URL == w.URL && slices.Equal(g.Events, w.Events)
	case []string:
		return slices.Equal(g, want.([]string))
	case []job.Lane:
		// Order is compared: a store keeps the lanes as the caller gave them.
		return slices.Equal(g, want.([]job.Lane))
	case *job.Pending:
		w := want.(*job.Pending)
		return (g == nil) == (w == nil) && (g == nil || *g == *w)
	case *job.Payload:
		w := want.(*job.Payload)
		return (g == nil) == (w == nil) && (g == nil || *g == *w)
	case job.Deliveries:
		w := want.(job.Deliveries)
		return g.Attempts == w.Attempts && g.LastStatus == w.LastStatus && g.DeliveredVersion == w.DeliveredVersion && g.DeliveredAt.Equal(w.DeliveredAt)
	}
	if !reflect.TypeOf(got).Comparable() {
		// A field of a type == cannot compare fails here rather than
		// panicking the whole suite.
		return reflect.DeepEqual(got, want)
	}
	return got == want
}

func show(v any) string {
	switch v := v.(type) {
	case time.Time:
		if v.IsZero() {
			return "zero time"
		}
		return v.UTC().Format(time.RFC3339Nano)
	case json.RawMessage:
		if v == nil {
			return "nil"
		}
		return fmt.Sprintf("%q", v)
	case string, job.State, job.ErrorClass:
		return fmt.Sprintf("%q", v)
	case *job.Pending:
		if v == nil {
			return "nil"
		}
		return fmt.Sprintf("%+v", *v)
	}
	return fmt.Sprint(v)
}

// applied asserts a transition succeeded with want, and the store holds want.
func (s *suite) applied(t *testing.T, what string, got job.Job, err error, want job.Job) {
	t.Helper()
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	same(t, what, got, want)
	same(t, what+" (stored)", s.get(t, want.ID), want)
}

// refused asserts err is a Conflict carrying want, and the store holds want.
func (s *suite) refused(t *testing.T, what string, err error, want job.Job) {
	t.Helper()
	cur, ok := job.ConflictJob(err)
	if !ok {
		t.Errorf("%s: got error %v, want a Conflict carrying the record", what, err)
	} else {
		same(t, what+" (conflict record)", cur, want)
	}
	same(t, what+" (stored)", s.get(t, want.ID), want)
}

// notFound asserts err is NotFound.
func notFound(t *testing.T, what string, err error) {
	t.Helper()
	if code := job.ErrorCode(err); code != job.CodeNotFound {
		t.Errorf("%s: got %v (code %q), want %q", what, err, code, job.CodeNotFound)
	}
}
