package console_test

import (
	"context"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"

	"github.com/aijobs/aijobs/pkg/console"
	"github.com/aijobs/aijobs/pkg/job"
	"github.com/aijobs/aijobs/pkg/memstore"
)

// The spend page shows every tenant with a limit, those the configuration
// names and those with recent jobs, each period's limit, spent, held,
// remaining and share used, the fullest first; a tenant without a limit
// is not shown, and a console without limits says so.
func TestSpendPageShowsEachTenantAgainstItsLimit(t *testing.T) {
	f := setup(t) // tenant-a's jobs are in the overview's window
	ctx := context.Background()
	spend := memstore.NewSpend()
	limits := map[string][]job.PeriodLimit{
		"tenant-a": {{Period: job.Day, Limit: job.Cents(100)}},
		"jwt:vip":  {{Period: job.Day, Limit: job.Cents(50)}, {Period: job.Month, Limit: job.Cents(500)}},
	}
	hold := func(tenant string, p job.Period, limit, amount, cost job.Nanocents, entry string, settle bool) {
		h := job.SpendHold{Tenant: tenant, Period: p, At: now, Limit: limit, Entry: entry, Amount: amount}
		if ok, err := spend.Hold(ctx, h); !ok || err != nil {
			t.Fatal(ok, err)
		}
		if settle {
			if err := spend.Settle(ctx, job.SpendSettle{SpendHold: h, Cost: cost}); err != nil {
				t.Fatal(err)
			}
		}
	}
	hold("tenant-a", job.Day, job.Cents(100), job.Cents(30), job.Cents(20), "a@1", true)
	hold("tenant-a", job.Day, job.Cents(100), job.Cents(5), 0, "b@1", false)
	hold("jwt:vip", job.Day, job.Cents(50), job.Cents(40), job.Cents(40), "c@1", true)
	c, err := console.New(console.Config{Store: f.store, Clock: f.clock, Token: token, Access: access,
		Spend: spend, SpendLimits: func(t string) []job.PeriodLimit { return limits[t] }, SpendTenants: []string{"jwt:vip", "jwt:idle"}})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(c)
	t.Cleanup(srv.Close)
	f.srv = srv
	code, body := f.get(t, "/spend")
	if code != 200 {
		t.Fatalf("spend: %d %s", code, body)
	}
	rows := regexp.MustCompile(`<tr data-tenant="([^"]+)" data-period="([^"]+)">(.*?)</tr>`).FindAllStringSubmatch(body, -1)
	var got []string
	for _, r := range rows {
		cells := regexp.MustCompile(`<td[^>]*>(?:<a[^>]*>)?([^<]*)`).FindAllStringSubmatch(r[3], -1)
		var cs []string
		for _, c := range cells {
			cs = append(cs, c[1])
		}
		got = append(got, strings.Join(cs, " | "))
	}
	want := []string{
		"jwt:vip | day | 50 | 40 | 0 | 10 | 80% | 2026-12-03 00:00:00Z",
		"tenant-a | day | 100 | 20 | 5 | 75 | 25% | 2026-12-03 00:00:00Z",
		"jwt:vip | month | 500 | 0 | 0 | 500 | 0% | 2027-01-01 00:00:00Z",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("rows:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	wantAll(t, "spend", body, `id="spend-tenants">3<`, `href="/spend" class="on"`)

	code, body = (&fixture{srv: setup(t).srv}).get(t, "/spend")
	if code != 200 || !strings.Contains(body, `id="spend-off"`) {
		t.Errorf("a console without limits: %d, no note that none is configured", code)
	}
}
