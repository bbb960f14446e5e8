package console

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/aijobs/aijobs/pkg/job"
)

// Quarantines is the part of the quarantine store (job.Quarantine) the
// console reads and writes: the list of what is in force, and a lift.
type Quarantines interface {
	List(ctx context.Context, tenant string, now time.Time) ([]job.Quarantine, error)
	Lift(ctx context.Context, k job.QuarantineKey) error
}

// quarantinesPage lists the quarantines in force, each with a Lift form.
type quarantinesPage struct {
	page
	Off         bool // no quarantine store: the page says so
	Tenant      string
	Quarantines []job.Quarantine
	Matched     int
	Source      string
	Done        string
}

// maxQuarantineRows bounds the page; aijobs quarantine list prints every
// one.
const maxQuarantineRows = 500

// maxKeyBytes bounds a tenant or a route in a form: the API refuses a
// tenant longer than this, so no quarantine has one.
const maxKeyBytes = 1024

func (c *Console) quarantines(w http.ResponseWriter, r *http.Request) {
	v := r.URL.Query()
	p := quarantinesPage{page: c.page(r, "quarantines", "Quarantines"), Off: c.cfg.Quarantines == nil, Tenant: v.Get("tenant")}
	p.Refresh = 0 // a list an operator acts on; reload to refresh
	if p.Tenant != "" {
		if err := keyPart("tenant", p.Tenant); err != nil {
			badRequest(w, err)
			return
		}
	}
	switch v.Get("done") {
	case "lifted":
		p.Done = "Lifted: creates of that input are accepted again."
	case "none":
		p.Done = "Nothing to lift: that input was not quarantined (any more)."
	}
	if p.Off {
		c.render(w, r, "quarantines.html", p)
		return
	}
	qs, err := c.cfg.Quarantines.List(r.Context(), p.Tenant, p.Now)
	if err != nil {
		c.unavailable(w, "quarantines", err)
		return
	}
	p.Matched = len(qs)
	p.Quarantines = qs[:min(len(qs), maxQuarantineRows)]
	p.Source = "every tenant's, a Scan of the quarantine table"
	if p.Tenant != "" {
		p.Source = "tenant " + p.Tenant + "'s, one Query of the quarantine table"
	}
	c.render(w, r, "quarantines.html", p)
}

// liftQuarantine ends one quarantine on the operator's word, then shows
// the list again (with the tenant filter it was lifted from). It reads
// the tenant's quarantines first, to log whether one was in force.
func (c *Console) liftQuarantine(w http.ResponseWriter, r *http.Request) {
	if c.cfg.Quarantines == nil {
		problem(w, http.StatusConflict, "quarantine_off", "the console has no quarantine table: quarantine is off (AIJOBS_QUARANTINE_FOR=0)")
		return
	}
	f := r.PostForm
	k := job.QuarantineKey{Tenant: f.Get("tenant"), Model: f.Get("route"), InputHash: f.Get("input_hash")}
	filter := f.Get("filter")
	if err := liftKey(k, filter); err != nil {
		badRequest(w, err)
		return
	}
	qs, err := c.cfg.Quarantines.List(r.Context(), k.Tenant, c.cfg.Clock.Now())
	if err != nil {
		c.unavailable(w, "lift quarantine", err)
		return
	}
	done := "none"
	for _, q := range qs {
		if q.Key() == k {
			done = "lifted"
		}
	}
	// The delete runs either way: it also removes an expired item TTL
	// has not deleted yet, and a second lift is a no-op.
	if err := c.cfg.Quarantines.Lift(r.Context(), k); err != nil {
		c.unavailable(w, "lift quarantine", err)
		return
	}
	c.log.Info("console action", "who", c.cfg.Who, "action", "lift quarantine", "tenant", k.Tenant, "route", k.Model,
		"input_hash", k.InputHash, "result", done)
	back := url.Values{"done": {done}}
	if filter != "" {
		back.Set("tenant", filter)
	}
	http.Redirect(w, r, "/quarantines?"+back.Encode(), http.StatusSeeOther)
}

// liftKey checks a lift form's fields.
func liftKey(k job.QuarantineKey, filter string) error {
	if err := keyPart("tenant", k.Tenant); err != nil {
		return err
	}
	if err := keyPart("route", k.Model); err != nil {
		return err
	}
	if !job.IsInputHash(k.InputHash) {
		return fieldError{"input_hash", "want sha256:<64 hex digits>"}
	}
	if filter != "" {
		return keyPart("filter", filter)
	}
	return nil
}

// keyPart checks a tenant or a route: present, bounded, printable text.
func keyPart(field, s string) error {
	switch {
	case strings.TrimSpace(s) == "":
		return fieldError{field, "required"}
	case len(s) > maxKeyBytes:
		return fieldError{field, "longer than any quarantine's"}
	case !utf8.ValidString(s) || strings.IndexFunc(s, unicode.IsControl) >= 0:
		return fieldError{field, "not printable text"}
	}
	return nil
}
