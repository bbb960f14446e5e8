package job_test

import (
	"encoding/json"
	"math"
	"testing"

	"github.com/aijobs/aijobs/pkg/job"
)

func TestNanocentsRoundTrip(t *testing.T) {
	tests := []struct {
		in   string
		want job.Nanocents
	}{
		{"0", 0},
		{"50", job.Cents(50)},
		{"0.42", 420_000_000},
		{"0.000000001", 1},
		{"123456789.123456789", 123456789_123456789},
		{"999999999.999999999", 999999999_999999999},
		{"7.5", 7_500_000_000},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := job.ParseCents(tt.in)
			if err != nil || got != tt.want {
				t.Fatalf("ParseCents(%q) = %d, %v; want %d", tt.in, got, err, tt.want)
			}
			if s := got.String(); s != tt.in {
				t.Errorf("String() = %q, want %q", s, tt.in)
			}
			b, err := json.Marshal(got)
			if err != nil || string(b) != tt.in {
				t.Errorf("MarshalJSON = %s, %v; want %s", b, err, tt.in)
			}
			var back job.Nanocents
			if err := json.Unmarshal(b, &back); err != nil || back != tt.want {
				t.Errorf("UnmarshalJSON(%s) = %d, %v; want %d", b, back, err, tt.want)
			}
		})
	}
}

func TestNanocentsStringCanonical(t *testing.T) {
	tests := []struct {
		n    job.Nanocents
		want string
	}{
		{job.Cents(1), "1"},
		{500_000_000, "0.5"},
		{1_000_000_010, "1.00000001"},
		{-420_000_000, "-0.42"},
		{math.MaxInt64, "9223372036.854775807"},
		{math.MinInt64, "-9223372036.854775808"}, // used to panic
	}
	for _, tt := range tests {
		if got := tt.n.String(); got != tt.want {
			t.Errorf("Nanocents(%d).String() = %q, want %q", int64(tt.n), got, tt.want)
		}
	}
}

func TestParseCentsRefusals(t *testing.T) {
	for _, s := range []string{
		"", "-1", "+1", "1e3", "1E3", "1.", ".5", "1.0000000001", "abc", "1234567890",
		"1.2.3", " 1", "1 ", "0x10", "1,5", "١", `"1"`, "NaN", "Inf",
	} {
		if v, err := job.ParseCents(s); err == nil {
			t.Errorf("ParseCents(%q) = %d, want an error", s, v)
		}
	}
}

func TestNanocentsUnmarshalJSON(t *testing.T) {
	var v struct {
		C job.Nanocents `json:"c"`
	}
	for _, body := range []string{`{"c":"1"}`, `{"c":-1}`, `{"c":1e3}`, `{"c":true}`, `{"c":1.0000000001}`} {
		if err := json.Unmarshal([]byte(body), &v); err == nil {
			t.Errorf("Unmarshal(%s) accepted: %d", body, v.C)
		}
	}
	// null leaves the amount alone, as encoding/json does for its own types.
	v.C = 7
	if err := json.Unmarshal([]byte(`{"c":null}`), &v); err != nil || v.C != 7 {
		t.Errorf("Unmarshal null = %d, %v; want 7, nil", v.C, err)
	}
}

func TestPricePerMillion(t *testing.T) {
	tests := []struct {
		in, out       string
		wantIn, wantO job.Nanocents
		wantErr       bool
	}{
		{in: "250", out: "1000", wantIn: 250_000, wantO: 1_000_000},
		{in: "7.5", out: "0.001", wantIn: 7_500, wantO: 1},
		{in: "0", out: "15", wantIn: 0, wantO: 15_000},
		{in: "0.125", out: "0.125", wantIn: 125, wantO: 125},
		{in: "0.0001", out: "1", wantErr: true}, // 4 decimals
		{in: "1", out: "2.5005", wantErr: true},
		{in: "-1", out: "1", wantErr: true},
		{in: "1", out: "abc", wantErr: true},
	}
	for _, tt := range tests {
		p, err := job.PricePerMillion(tt.in, tt.out)
		if tt.wantErr {
			if err == nil {
				t.Errorf("PricePerMillion(%q, %q) = %+v, want an error", tt.in, tt.out, p)
			}
			continue
		}
		if err != nil || p.InputPerToken != tt.wantIn || p.OutputPerToken != tt.wantO {
			t.Errorf("PricePerMillion(%q, %q) = %+v, %v; want %d/%d", tt.in, tt.out, p, err, tt.wantIn, tt.wantO)
		}
	}
}

func TestPriceCost(t *testing.T) {
	p, err := job.PricePerMillion("250", "1000")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		in, out int64
		want    string
	}{
		{0, 0, "0"},
		{1, 0, "0.00025"},
		{0, 1, "0.001"},
		{1_000_000, 0, "250"},
		{1_000_000, 1_000_000, "1250"},
		{1234, 567, "0.8755"},
	}
	for _, tt := range tests {
		if got := p.Cost(tt.in, tt.out).String(); got != tt.want {
			t.Errorf("Cost(%d, %d) = %s, want %s", tt.in, tt.out, got, tt.want)
		}
	}
}

// Summing many small costs is exact in Nanocents; the same sum in float64
// cents drifts, which is why money is never a float in the record.
func TestCostSumIsExact(t *testing.T) {
	p, err := job.PricePerMillion("7.5", "30")
	if err != nil {
		t.Fatal(err)
	}
	const n = 1_000_000
	var exact job.Nanocents
	var float float64
	one := p.Cost(1, 1) // 7500 + 30000 nanocents
	oneFloat := 7.5/1e6 + 30.0/1e6
	for range n {
		exact += one
		float += oneFloat
	}
	if exact.String() != "37.5" {
		t.Errorf("exact sum = %s, want 37.5", exact)
	}
	if float == 37.5 {
		t.Errorf("float64 sum is exactly 37.5; the contrast this test shows is gone")
	}
	t.Logf("float64 cents after %d additions: %.17g (drift %.3g)", n, float, float-37.5)
}

func TestABillPricesCachedInputAtItsOwnRates(t *testing.T) {
	p := job.Price{InputPerToken: 100, OutputPerToken: 400, CachedInputPerToken: 10, CacheWritePerToken: 125}
	cases := []struct {
		name string
		t    job.Tokens
		want job.Nanocents
	}{
		{"no cache", job.Tokens{Input: 1000, Output: 10}, 1000*100 + 10*400},
		{"cache read", job.Tokens{Input: 1000, Output: 10, CachedInput: 800}, 200*100 + 800*10 + 10*400},
		{"cache write", job.Tokens{Input: 1000, Output: 10, CacheWrite: 600}, 400*100 + 600*125 + 10*400},
		{"both", job.Tokens{Input: 1000, CachedInput: 500, CacheWrite: 300}, 200*100 + 500*10 + 300*125},
		{"parts above the input are cut to it", job.Tokens{Input: 100, CachedInput: 80, CacheWrite: 80}, 80*10 + 20*125},
		{"negative counts bill nothing", job.Tokens{Input: -5, Output: -5, CachedInput: -5}, 0},
	}
	for _, c := range cases {
		if got := p.Bill(c.t); got != c.want {
			t.Errorf("%s: billed %d, want %d", c.name, got, c.want)
		}
	}
	plain := job.Price{InputPerToken: 100, OutputPerToken: 400}
	if got, want := plain.Bill(job.Tokens{Input: 1000, CachedInput: 800, CacheWrite: 200}), plain.Cost(1000, 0); got != want {
		t.Errorf("a price without cached rates billed %d for cached input, want the input price's %d", got, want)
	}
}
