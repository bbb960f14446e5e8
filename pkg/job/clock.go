package job

import "time"

// Clock is how every package learns the time, so tests can move it and no
// rule calls time.Now deep inside.
type Clock interface{ Now() time.Time }

// SystemClock is the wall clock.
type SystemClock struct{}

// Now returns the current UTC time.
func (SystemClock) Now() time.Time { return time.Now().UTC() }
