package bedrock_test

import "testing"

// BenchmarkProvider measures what the provider adds to an attempt, the
// SDK included: request serialisation, SigV4 signing, response or event
// stream decoding (modeltest.Wire.Benchmark, docs/benchmarks.md).
func BenchmarkProvider(b *testing.B) { wire().Benchmark(b) }
