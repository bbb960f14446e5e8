package wire

import "time"

// TimeFormat is how the API writes times: RFC 3339 in UTC with
// milliseconds, the precision the store keeps.
const TimeFormat = "2006-01-02T15:04:05.000Z07:00"

// Time is a time of the wire types: written in TimeFormat, read from any
// RFC 3339 time, a time.Time for everything else.
type Time struct{ time.Time }

// MarshalJSON writes t in TimeFormat.
func (t Time) MarshalJSON() ([]byte, error) {
	return []byte(`"` + t.UTC().Format(TimeFormat) + `"`), nil
}
