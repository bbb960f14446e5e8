package devserver

import (
	"sync"
	"time"
)

// Usage is what a poller's invocations would be billed for by Lambda:
// each invocation's duration, from the handler's start to its answer (or
// to the function timeout, where Lambda stops it), rounded up to the millisecond, times the
// function's configured memory (Lambda rounds each invocation's duration
// up to the nearest millisecond, with no minimum:
// https://aws.amazon.com/blogs/aws/new-for-aws-lambda-1ms-billing-granularity-adds-cost-savings/).
// It leaves out what the emulator cannot see: the Init phase of cold
// starts.
type Usage struct {
	Invocations int
	// Billed is the invocations' rounded durations, summed.
	Billed time.Duration
	// GBSeconds is Billed times the memory, in GB-seconds (1 GB = 1024 MB,
	// as Lambda counts).
	GBSeconds float64
}

// meter adds invocations to a Usage.
type meter struct {
	mu sync.Mutex
	u  Usage
}

// record adds an invocation that took took, of a function with timeout
// and memoryMB. An overrun is billed the timeout: Lambda stops the
// function there, and the emulator's own lateness in noticing it (a
// loaded machine's timer firing late) is no part of the bill.
func (m *meter) record(took, timeout time.Duration, memoryMB int) {
	if timeout > 0 {
		took = min(took, timeout)
	}
	billed := (took + time.Millisecond - 1).Truncate(time.Millisecond)
	m.mu.Lock()
	m.u.Invocations++
	m.u.Billed += billed
	m.u.GBSeconds += billed.Seconds() * float64(memoryMB) / 1024
	m.mu.Unlock()
}

func (m *meter) usage() Usage {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.u
}
