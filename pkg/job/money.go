package job

import (
	"errors"
	"strconv"
	"strings"
)

// Nanocents is an amount of money in units of 1e-9 US cent. Model prices are
// quoted per million tokens with up to three decimals of a cent, so tokens x
// price is an exact integer in this unit: sums over attempts never drift the
// way float cents do. The API shows it as decimal cents.
type Nanocents int64

// NanosPerCent is the number of Nanocents in one cent.
const NanosPerCent Nanocents = 1_000_000_000

// Cents builds an amount from whole cents.
func Cents(c int64) Nanocents { return Nanocents(c) * NanosPerCent }

// String formats the amount as decimal cents with no trailing zeros: "0.42".
func (n Nanocents) String() string {
	neg := n < 0
	// The magnitude as uint64, so the most negative amount has one too.
	u := uint64(n)
	if neg {
		u = -u
	}
	whole, frac := u/uint64(NanosPerCent), u%uint64(NanosPerCent)
	s := strconv.FormatUint(whole, 10)
	if frac != 0 {
		f := strconv.FormatUint(frac, 10)
		f = strings.Repeat("0", 9-len(f)) + f
		s += "." + strings.TrimRight(f, "0")
	}
	if neg {
		s = "-" + s
	}
	return s
}

// MarshalJSON writes the amount as a JSON number of cents, exactly.
func (n Nanocents) MarshalJSON() ([]byte, error) { return []byte(n.String()), nil }

// UnmarshalJSON reads a JSON number of cents, exactly. Like encoding/json
// itself, it leaves the amount alone on null.
func (n *Nanocents) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		return nil
	}
	v, err := ParseCents(string(b))
	if err != nil {
		return err
	}
	*n = v
	return nil
}

var errBadCents = errors.New("not a decimal amount of cents with at most 9 decimals")

// ParseCents reads a non-negative decimal number of cents ("50", "0.125")
// without going through float64. Exponents and more than nine decimals are
// refused rather than rounded.
func ParseCents(s string) (Nanocents, error) {
	whole, frac, _ := strings.Cut(s, ".")
	if whole == "" || len(whole) > 9 || len(frac) > 9 || strings.Contains(s, ".") && frac == "" {
		return 0, errBadCents
	}
	for _, r := range whole + frac {
		if r < '0' || r > '9' {
			return 0, errBadCents
		}
	}
	w, _ := strconv.ParseInt(whole, 10, 64)
	f := int64(0)
	if frac != "" {
		f, _ = strconv.ParseInt(frac+strings.Repeat("0", 9-len(frac)), 10, 64)
	}
	return Nanocents(w)*NanosPerCent + Nanocents(f), nil
}

// Price is what a model charges, in Nanocents per token, for input (prompt)
// and output (completion) tokens, and for input tokens the provider read
// from or wrote to its prompt cache. It is parsed from cents per million
// tokens so configuration reads like a provider's price page.
type Price struct {
	InputPerToken  Nanocents
	OutputPerToken Nanocents
	// CachedInputPerToken and CacheWritePerToken price the input tokens a
	// provider served from its prompt cache and wrote to it. Zero means
	// the input price: a rate nobody stated is never taken for free, so
	// the record is never below the bill (config sets each provider's
	// documented rates, docs/architecture.md, "Money").
	CachedInputPerToken Nanocents
	CacheWritePerToken  Nanocents
}

// Tokens is what one call used, as its provider bills it. Input counts
// every input token, those read from and written to the prompt cache
// included (CachedInput and CacheWrite are parts of it); Output every
// output token, reasoning ones included.
type Tokens struct {
	Input, Output           int64
	CachedInput, CacheWrite int64
}

// Bill is what t costs at p: the uncached input at the input price, the
// cached parts at theirs, the output at the output price. Parts larger
// than the input (a provider's bug) are cut to it, so no count is billed
// twice and none below zero.
func (p Price) Bill(t Tokens) Nanocents {
	in := max(t.Input, 0)
	read := min(max(t.CachedInput, 0), in)
	write := min(max(t.CacheWrite, 0), in-read)
	readRate, writeRate := p.CachedInputPerToken, p.CacheWritePerToken
	if readRate == 0 {
		readRate = p.InputPerToken
	}
	if writeRate == 0 {
		writeRate = p.InputPerToken
	}
	return Nanocents(in-read-write)*p.InputPerToken + Nanocents(read)*readRate +
		Nanocents(write)*writeRate + Nanocents(max(t.Output, 0))*p.OutputPerToken
}

// PricePerMillion builds a Price from cents per million tokens, as decimal
// strings with at most three decimals ("250" for $2.50/M, "7.5").
func PricePerMillion(inputCents, outputCents string) (Price, error) {
	in, err := perMillion(inputCents)
	if err != nil {
		return Price{}, err
	}
	out, err := perMillion(outputCents)
	if err != nil {
		return Price{}, err
	}
	return Price{InputPerToken: in, OutputPerToken: out}, nil
}

func perMillion(s string) (Nanocents, error) {
	v, err := ParseCents(s)
	if err != nil {
		return 0, err
	}
	if v%1_000_000 != 0 {
		return 0, errors.New("price per million tokens has more than 3 decimals of a cent")
	}
	return v / 1_000_000, nil
}

// Cost is what the given token counts cost at this price.
func (p Price) Cost(inputTokens, outputTokens int64) Nanocents {
	return Nanocents(inputTokens)*p.InputPerToken + Nanocents(outputTokens)*p.OutputPerToken
}
