package openai_test

import "testing"

// BenchmarkProvider measures what the provider adds to an attempt
// (modeltest.Wire.Benchmark, docs/benchmarks.md).
func BenchmarkProvider(b *testing.B) { wire().Benchmark(b) }
