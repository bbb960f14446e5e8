# aijobs: two commands do all the setup on a fresh machine (Go and Node only):
#   make dev    build what is needed, start kumo and the dev server on 127.0.0.1:8080
#   make test   every test (each test binary starts and stops its own kumo)
#   make test-moto  the AWS-backed tests again, on moto (moto_server) instead of kumo
SHELL := /bin/bash
KUMO_VERSION := v0.33.1
# AWS's Lambda Runtime Interface Emulator: e2e's runtime test runs each
# function's bootstrap under it (the real runtime API loop, not a stand-in).
RIE_VERSION := v0.0.0-20261030222936-bef5c4ba774d
STATICCHECK := honnef.co/go/tools/cmd/staticcheck@v0.8.2
# Explicit roots: ./... would also walk node_modules (the CDK CLI ships Go templates).
GO_PKGS := ./cmd/... ./e2e/... ./functions/... ./internal/... ./pkg/...

.PHONY: all build dev test test-moto test-chaos-harsh lint unit bench bench-coldstart bench-scale chaos fuzz kumo docs chromium screenshots clean

# The CDK stack's targets (synth, deploy, test-infra, localstack-*).
-include infra.mk

all: build

bin/kumo:
	@mkdir -p bin
	@echo "building kumo $(KUMO_VERSION) into bin/ (about 5-8 minutes the first time)"
	@dir=$$(go mod download -json github.com/sivchari/kumo@$(KUMO_VERSION) | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",*$$/\1/p'); \
	  test -n "$$dir" || { echo "go mod download of kumo failed"; exit 1; }; \
	  cd "$$dir" && GOFLAGS=-mod=mod go build -o "$(CURDIR)/bin/kumo" ./cmd/kumo

kumo: bin/kumo

bin/aws-lambda-rie:
	@mkdir -p bin
	GOBIN=$(CURDIR)/bin go install github.com/aws/aws-lambda-runtime-interface-emulator/cmd/aws-lambda-rie@$(RIE_VERSION)

# The console's browser tests (cmd/aijobs, TestConsoleInABrowser) drive a
# headless Chromium: Debian's package, installed here when missing (as root,
# or through sudo), so a fresh machine needs nothing by hand.
chromium:
	@command -v chromium >/dev/null 2>&1 || { \
	  echo "installing chromium (Debian package) for the console's browser tests"; \
	  if [ "$$(id -u)" = 0 ]; then sudo=; else sudo=sudo; fi; \
	  $$sudo apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$sudo apt-get install -y -qq chromium >/dev/null; }
	@command -v chromium >/dev/null 2>&1 || { echo "chromium is still missing"; exit 1; }

# The console's screenshots in docs/ (docs/operations.md, docs/cli.md), redrawn by the
# browser test.
screenshots: bin/kumo chromium
	KUMO_BIN=$(CURDIR)/bin/kumo go test -count=1 -run TestConsoleInABrowser ./cmd/aijobs -console.screenshots

build:
	go build -o bin/aijobs-dev ./cmd/aijobs-dev
	go build -o bin/aijobs-bench ./cmd/aijobs-bench
	go build -o bin/aijobs-chaos ./cmd/aijobs-chaos
	go build -o bin/aijobs ./cmd/aijobs
	go build ./...

dev: bin/kumo build
	@scripts/dev.sh

lint:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	go vet $(GO_PKGS)
	go run $(STATICCHECK) $(GO_PKGS)

unit:
	go test -count=1 ./pkg/job/... ./pkg/settings/... ./pkg/config/... ./pkg/worker/... ./pkg/api/... ./pkg/model/... \
	  ./pkg/reconciler/... ./pkg/replay/... ./pkg/advise/... ./pkg/client/...

test: bin/kumo bin/aws-lambda-rie chromium lint
	KUMO_BIN=$(CURDIR)/bin/kumo RIE_BIN=$(CURDIR)/bin/aws-lambda-rie go test -race -count=1 -timeout 15m $(GO_PKGS)
	@$(MAKE) --no-print-directory fuzz FUZZTIME=$(TEST_FUZZTIME)

# The AWS-backed packages (the store conformance suite, queue, stream,
# secrets, operator and console tests, chaos, end to end) on moto, a second
# emulator no one here wrote: each test binary starts its own moto_server
# (pip install 'moto[server]'). scripts/test-moto.sh holds the one list of
# tests excluded there, each for a moto gap reproduced in internal/moto,
# and prints it.
test-moto: chromium bin/aws-lambda-rie
	@RIE_BIN=$(CURDIR)/bin/aws-lambda-rie scripts/test-moto.sh

# The harsh chaos profile's short seeded run (docs/chaos.md), on its own
# after make test: CI runs it (.ci/run), as make test runs the default one.
test-chaos-harsh: bin/kumo
	KUMO_BIN=$(CURDIR)/bin/kumo go test -tags chaosharsh -count=1 -timeout 15m -run TestShortHarshChaosRun -v ./internal/chaos

# Fuzz targets (package:target), each run for FUZZTIME by `make fuzz` and
# for TEST_FUZZTIME by `make test` (their committed seeds also run as plain
# tests in every go test). A failure writes its input to the package's
# testdata/fuzz/<target>/: commit it with the fix, as a seed. scripts/fuzz.sh
# tells that from Go 1.26's -fuzztime shutdown race (golang/go#75804).
FUZZ_TARGETS := ./pkg/api:FuzzCreate ./pkg/api:FuzzList ./pkg/dynamodb:FuzzDecodeItem \
  ./pkg/model/openai:FuzzStream ./pkg/model/anthropic:FuzzStream ./pkg/model/bedrock:FuzzStream
FUZZTIME ?= 10s
TEST_FUZZTIME ?= 4s

fuzz:
	@scripts/fuzz.sh $(FUZZTIME) $(FUZZ_TARGETS)

# docs/api.html, the offline API reference, rendered from docs/openapi.yaml
# (internal/apispec's test fails while it is stale).
docs:
	go run ./cmd/aijobs-apidoc

# The end-to-end run and its ceiling, the end-to-end run again with a
# callback on every job (the notifier's share), then 50 jobs per model latency,
# batched and one per invocation, all latencies at once (about 2.5
# minutes: the 120 s calls), then 20 jobs per latency polled as
# Retry-After says, one latency after another (about 1 minute more);
# docs/benchmarks.md. -latencies none and -cadence none skip either,
# -callback-jobs 0 the callback run.
BENCH_ARGS ?= -jobs 1000 -concurrency 64 -callback-jobs 1000 -latencies 1s,10s,30s,120s -latency-jobs 50 -cadence 1s,10s,30s -cadence-jobs 20
COLDSTART_RUNS ?= 15

bench: bin/kumo
	KUMO_BIN=$(CURDIR)/bin/kumo go run ./cmd/aijobs-bench $(BENCH_ARGS)

# Each function's shipped binary size and init time (docs/benchmarks.md).
bench-coldstart: bin/kumo bin/aws-lambda-rie
	KUMO_BIN=$(CURDIR)/bin/kumo RIE_BIN=$(CURDIR)/bin/aws-lambda-rie go run ./cmd/aijobs-bench -coldstart $(COLDSTART_RUNS)

# jobs/s and p99 create/poll latency by client concurrency (1 to 256,
# max(100, 8 per client) jobs per point, 3 runs each), 10,000 jobs at 64
# clients, and worker memory per job in flight (1000 jobs over a 15 s fake
# model); rewrites docs/bench-scale.svg (about 2.5 minutes; docs/benchmarks.md).
SCALE_ARGS ?= -scale -scale-svg docs/bench-scale.svg

bench-scale: bin/kumo
	KUMO_BIN=$(CURDIR)/bin/kumo go run ./cmd/aijobs-bench $(SCALE_ARGS)

# One reconciler sweep's AWS calls by operation over 5,000, 20,000 and
# 50,000 queued jobs older than its horizon, on kumo (about 20 s;
# docs/benchmarks.md, "Reconciler under a backlog"). RECONCILER_BENCH=
# '-backlog=5000,20000,50000 -examine=1000000' examines every candidate,
# as sweeps did before their budget (about a minute).
RECONCILER_BENCH ?= -backlog=5000,20000,50000
.PHONY: bench-reconciler
bench-reconciler: bin/kumo
	KUMO_BIN=$(CURDIR)/bin/kumo go test -count=1 -timeout 20m -v -run '^TestSweepCostUnderABacklog$$' ./pkg/reconciler -args $(RECONCILER_BENCH)

# The chaos run (docs/chaos.md): SEED=0 draws a new seed (printed); the same
# SEED, JOBS and DURATION replay a run's schedule.
SEED ?= 0
JOBS ?= 500
DURATION ?= 2m
PROFILE ?= default

chaos: bin/kumo
	go build -o bin/aijobs-chaos ./cmd/aijobs-chaos
	KUMO_BIN=$(CURDIR)/bin/kumo bin/aijobs-chaos -seed $(SEED) -jobs $(JOBS) -duration $(DURATION) -profile $(PROFILE)

clean:
	rm -rf bin dist
