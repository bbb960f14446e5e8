package console

import (
	"bytes"
	"embed"
	"encoding/json"
	"fmt"
	"html/template"
	"io/fs"
	"maps"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/aijobs/aijobs/pkg/job"
)

//go:embed templates/*.html
var templateFiles embed.FS

//go:embed static
var assets embed.FS

// page is what every page's layout shows.
type page struct {
	Nav     string
	Title   string
	Who     string
	Token   string
	Refresh int // seconds; 0: the page does not poll
	Now     time.Time
	Calls   string
}

func (c *Console) page(r *http.Request, nav, title string) page {
	p := page{Nav: nav, Title: title, Who: c.cfg.Who, Token: c.cfg.Token, Refresh: int(c.cfg.Refresh / time.Second), Now: c.cfg.Clock.Now()}
	if c.cfg.Calls != nil {
		calls := c.cfg.Calls()
		n := 0
		var parts []string
		for _, k := range slices.Sorted(maps.Keys(calls)) {
			n += calls[k]
			parts = append(parts, fmt.Sprintf("%s %d", k, calls[k]))
		}
		p.Calls = fmt.Sprintf("%d AWS calls since start (%s)", n, strings.Join(parts, ", "))
	}
	return p
}

var funcs = template.FuncMap{
	"stamp": func(t time.Time) string {
		if t.IsZero() {
			return "-"
		}
		return t.UTC().Format("2006-01-02 15:04:05Z")
	},
	"ago": func(now, t time.Time) string {
		if t.IsZero() {
			return "-"
		}
		return now.Sub(t).Truncate(time.Second).String()
	},
	"cents": func(n job.Nanocents) string { return n.String() },
	// minus shows a negative amount as cost is shown, after a minus sign
	// a reader cannot take for a hyphen: a premium is a saving below zero.
	"minus": func(n job.Nanocents) string { return "\u2212" + strings.TrimPrefix(n.String(), "-") },
	"pretty": func(raw json.RawMessage) string {
		var b bytes.Buffer
		if len(raw) == 0 {
			return ""
		}
		if err := json.Indent(&b, raw, "", "  "); err != nil {
			return string(raw)
		}
		return b.String()
	},
	"states": func() []job.State {
		return []job.State{job.Queued, job.Running, job.Succeeded, job.Failed, job.Abandoned}
	},
	"classes": job.Classes,
	"list":    func(xs ...any) []any { return xs },
	"pct":     func(f float64) string { return fmt.Sprintf("%.0f%%", f*100) },
	"rate": func(f float64) string {
		if f < 0 {
			return "not yet known (needs two samples)"
		}
		return fmt.Sprintf("%.1f a minute", f)
	},
	"depth": func(n int) string {
		if n < 0 {
			return "unknown"
		}
		return fmt.Sprint(n)
	},
}

// parseTemplates reads one set per page: the layout with that page's
// blocks.
func parseTemplates() (map[string]*template.Template, error) {
	out := map[string]*template.Template{}
	names, err := fs.Glob(templateFiles, "templates/*.html")
	if err != nil {
		return nil, err
	}
	for _, n := range names {
		base := strings.TrimPrefix(n, "templates/")
		if base == "layout.html" {
			continue
		}
		t, err := template.New("layout.html").Funcs(funcs).ParseFS(templateFiles, "templates/layout.html", n)
		if err != nil {
			return nil, fmt.Errorf("console: template %s: %w", base, err)
		}
		out[base] = t
	}
	return out, nil
}

// render writes the page, or only its live part when the page's script
// polls for it (X-Console-Live), so a refresh swaps numbers in place.
func (c *Console) render(w http.ResponseWriter, r *http.Request, name string, data any) {
	t := c.tmpl[name]
	which := "layout.html"
	if r.Header.Get("X-Console-Live") == "1" && t.Lookup("live") != nil {
		which = "live"
	}
	var b bytes.Buffer
	if err := t.ExecuteTemplate(&b, which, data); err != nil {
		c.log.Error("console: render", "page", name, "err", err)
		problem(w, http.StatusInternalServerError, "render_failed", "the page could not be drawn")
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	_, _ = b.WriteTo(w)
}

// unavailable answers a read the store or a queue failed: 503, the error
// in the log only.
func (c *Console) unavailable(w http.ResponseWriter, what string, err error) {
	c.log.Error("console: read failed", "page", what, "err", err)
	problem(w, http.StatusServiceUnavailable, "store_unavailable", "the jobs table or a queue did not answer; try again")
}
