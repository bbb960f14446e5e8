//go:build race

package e2e

// raceDetector: this binary runs under -race (make test, make test-moto),
// which makes the API's parsing of a create about 14 times slower: a 20
// MB uploaded input took 30.8 s to accept under -race, past API
// Gateway's 29 s, against 2.3 s without it (2026-12-07, pkg/api, one
// core). TestLargeInputsEndToEnd sends 6 MB there (uploadBytes).
const raceDetector = true
