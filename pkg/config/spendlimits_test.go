package config_test

import (
	"reflect"
	"testing"

	"github.com/aijobs/aijobs/pkg/config"
	"github.com/aijobs/aijobs/pkg/job"
)

func dollars(d int64, c int64) job.Nanocents { return job.Cents(d*100 + c) }

// AIJOBS_TENANT_SPEND's grammar: period defaults, a tenant's override
// replacing only the periods it names, none lifting a period or both.
func TestTenantSpendLimits(t *testing.T) {
	c, err := config.Load(env(map[string]string{"AIJOBS_TENANT_SPEND": "day=$50, month=1000.5,jwt:tenant-a=day:$5.25,jwt:tenant-b=none,iam:AROA:app=month:none+day:$0"}))
	if err != nil {
		t.Fatal(err)
	}
	for tenant, want := range map[string][]job.PeriodLimit{
		"jwt:other":    {{Period: job.Day, Limit: dollars(50, 0)}, {Period: job.Month, Limit: dollars(1000, 50)}},
		"jwt:tenant-a": {{Period: job.Day, Limit: dollars(5, 25)}, {Period: job.Month, Limit: dollars(1000, 50)}},
		"jwt:tenant-b": nil,
		"iam:AROA:app": {{Period: job.Day, Limit: 0}},
	} {
		if got := c.Spend.For(tenant); !reflect.DeepEqual(got, want) {
			t.Errorf("%s: %v, want %v", tenant, got, want)
		}
	}
	if !c.Spend.Any() || !c.SharedLimits() {
		t.Error("a spend limit does not share limits through the buckets table")
	}
	empty, err := config.Load(env(nil))
	if err != nil || empty.Spend.Any() || empty.Spend.For("jwt:x") != nil {
		t.Fatalf("no AIJOBS_TENANT_SPEND limits something: %v %v", empty.Spend, err)
	}
}

func TestTenantSpendLimitsRefused(t *testing.T) {
	for _, text := range []string{"50", "week=$5", "day=$5.123", "day=$-1", "day=$.5", "day=abc", "jwt:a=$5", "jwt:a=week:$5", "=day:$5", "day=$10000001"} {
		if _, err := config.Load(env(map[string]string{"AIJOBS_TENANT_SPEND": text})); err == nil {
			t.Errorf("%q was accepted", text)
		}
	}
}
