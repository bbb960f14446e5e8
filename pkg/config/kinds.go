package config

import (
	"fmt"
	"strconv"
	"time"

	"github.com/aijobs/aijobs/pkg/job"
	"github.com/aijobs/aijobs/pkg/settings"
)

// kind is how a variable's text becomes a value, and how a default value is
// written back as the text a user would set: one pair, so a default printed
// in docs/configuration.md always parses to the value it came from.
type kind[T any] struct {
	parse  func(string) (T, error)
	format func(T) string
}

var (
	text     = kind[string]{parse: func(v string) (string, error) { return v, nil }, format: func(v string) string { return v }}
	duration = kind[time.Duration]{parse: parseDuration, format: formatDuration}
	count    = kind[int]{parse: parseCount, format: strconv.Itoa}
	amount   = kind[job.Nanocents]{parse: parseCents, format: job.Nanocents.String}
	boolean  = kind[bool]{parse: parseFlag, format: strconv.FormatBool}
	fraction = kind[float64]{parse: parseFraction, format: func(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }}
)

// parseFraction reads a share of something, above 0 and at most 1.
func parseFraction(v string) (float64, error) {
	f, err := strconv.ParseFloat(v, 64)
	if err != nil || !(f > 0 && f <= 1) {
		return 0, fmt.Errorf("want a share above 0 and at most 1, like 0.8")
	}
	return f, nil
}

// setting declares a variable that sets one settings field (field returns
// its address in a Settings); its default is the field's value in
// settings.Defaults(), the one place that number is written.
func setting[T any](name string, k kind[T], field func(*settings.Settings) *T, doc string) Var {
	def := settings.Defaults()
	return Var{Name: name, Default: k.format(*field(&def)), Doc: doc,
		set: into(k, func(c *Config) *T { return field(&c.Settings) })}
}

// into sets what f points to in a Config from a variable's text.
func into[T any](k kind[T], f func(*Config) *T) func(*Config, string) error {
	return func(c *Config, v string) error {
		x, err := k.parse(v)
		if err != nil {
			return err
		}
		*f(c) = x
		return nil
	}
}

func parseDuration(v string) (time.Duration, error) {
	d, err := time.ParseDuration(v)
	if err != nil || d < 0 {
		return 0, fmt.Errorf("want a duration like 30s")
	}
	return d, nil
}

// formatDuration writes a default as docs/configuration.md shows it: whole hours as
// "24h" and whole minutes from five on as "15m" (periods and deadlines),
// anything shorter or uneven in seconds, "180s" or "1082s", as AWS states
// function and queue timeouts; below a second, Go's own "500ms".
func formatDuration(d time.Duration) string {
	switch {
	case d >= time.Hour && d%time.Hour == 0:
		return strconv.FormatInt(int64(d/time.Hour), 10) + "h"
	case d >= 5*time.Minute && d%time.Minute == 0:
		return strconv.FormatInt(int64(d/time.Minute), 10) + "m"
	case d%time.Second == 0:
		return strconv.FormatInt(int64(d/time.Second), 10) + "s"
	}
	return d.String()
}

func parseCount(v string) (int, error) {
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("want a whole number")
	}
	return n, nil
}

func parseCents(v string) (job.Nanocents, error) {
	n, err := job.ParseCents(v)
	if err != nil {
		return 0, fmt.Errorf("want a decimal number of cents: %w", err)
	}
	return n, nil
}

func parseFlag(v string) (bool, error) {
	b, err := strconv.ParseBool(v)
	if err != nil {
		return false, fmt.Errorf("want true or false")
	}
	return b, nil
}
