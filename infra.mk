# The CDK stack (infra/, its own Go module) and LocalStack. Included from
# the Makefile; see docs/deploy.md. Nothing in `make test` depends on these.
#   make cdk-cli          the pinned CDK CLI (package.json) into ./node_modules
#   make lambdas          dist/{api,worker,reconciler,notifier,collector}/bootstrap (linux/arm64)
#   make synth            cdk synth (offline; the template lands in cdk.out/)
#   make deploy           cdk deploy (CDK_ARGS="-c alarmEmail=ops@example.com")
#   make test-infra       the infra module's tests, including cdk and cdklocal synth
#                         and cfn-lint on every template they synthesize
#   make localstack-up / localstack-deploy / localstack-test / localstack-down

# No telemetry, no notices: synth must work offline and report nothing.
CDK_ENV := CDK_DISABLE_CLI_TELEMETRY=true
CDK := $(CDK_ENV) $(CURDIR)/node_modules/.bin/cdk
CDKLOCAL := $(CDK_ENV) $(CURDIR)/node_modules/.bin/cdklocal
CDK_ARGS ?=
STATICCHECK ?= honnef.co/go/tools/cmd/staticcheck@v0.8.2
LAMBDA_FUNCTIONS := api worker reconciler notifier collector
LAMBDA_BUILD := CGO_ENABLED=0 GOOS=linux GOARCH=arm64 go build -tags lambda.norpc -trimpath -ldflags="-s -w"

LOCALSTACK_URL := http://127.0.0.1:4566
# LocalStack accepts any credentials; these keep a developer's real ones
# (and their account) out of the end-to-end run. cdklocal needs none: it
# strips AWS_* settings itself and targets localhost:4566 (it refuses an
# AWS_ENDPOINT_URL without AWS_ENDPOINT_URL_S3).
LOCALSTACK_ENV := AWS_ENDPOINT_URL=$(LOCALSTACK_URL) AWS_REGION=us-east-1 AWS_DEFAULT_REGION=us-east-1 \
	AWS_ACCESS_KEY_ID=test AWS_SECRET_ACCESS_KEY=test AWS_SESSION_TOKEN= AWS_PROFILE=
COMPOSE := docker compose -f localstack/docker-compose.yml

.PHONY: cdk-cli lambdas synth deploy test-infra need-docker localstack-up localstack-deploy localstack-test localstack-down

# npm ci, then a go.mod in node_modules: it makes node_modules a module of
# its own, so the root module's ./... (go vet, go test, staticcheck) never
# walks into the Go init templates the CDK CLI ships. Written last, it is
# also the stamp that the install finished.
node_modules/go.mod: package.json package-lock.json
	npm ci --no-audit --no-fund
	@printf 'module ignored/node_modules\n\n// Written by make cdk-cli (infra.mk): keeps node_modules out of the root module.\n' > $@

cdk-cli: node_modules/go.mod

# Always run: go build is incremental, and a stale binary would deploy old code.
lambdas:
	@for f in $(LAMBDA_FUNCTIONS); do \
	  echo "building dist/$$f/bootstrap (linux/arm64)"; \
	  $(LAMBDA_BUILD) -o dist/$$f/bootstrap ./functions/$$f || exit 1; \
	done

synth: cdk-cli lambdas
	$(CDK) synth --quiet $(CDK_ARGS)

deploy: cdk-cli lambdas
	$(CDK) deploy $(CDK_ARGS)

# The tests build their own placeholder bootstrap files, so they need no
# Lambda build; AIJOBS_REQUIRE_CDK_CLI makes the CLI synth tests fail
# instead of skipping when the CLI is missing, AIJOBS_REQUIRE_CFN_LINT the
# same for cfn-lint (pip install cfn-lint), which lints every template the
# tests synthesize with the committed .cfnlintrc (infra/cfnlint_test.go).
test-infra: cdk-cli
	cd infra && $(CDK_ENV) AIJOBS_REQUIRE_CDK_CLI=1 AIJOBS_REQUIRE_CFN_LINT=1 go test -count=1 -timeout 15m ./...
	cd infra && out=$$(gofmt -l .); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	cd infra && go vet ./...
	cd infra && go run $(STATICCHECK) ./...

# LocalStack runs in a container: without a Docker engine (as in CI) every
# localstack-* target stops here, with a message, non-zero.
need-docker:
	@command -v docker >/dev/null 2>&1 && docker info >/dev/null 2>&1 || { \
	  echo "LocalStack needs a running Docker engine, and none was found."; \
	  echo "The default local stack needs no Docker: make dev (kumo); make test runs everything else."; exit 1; }

localstack-up: need-docker
	$(COMPOSE) up -d --wait

localstack-down: need-docker
	$(COMPOSE) down

localstack-deploy: need-docker cdk-cli lambdas
	$(CDKLOCAL) bootstrap -c throwaway=true $(CDK_ARGS)
	$(CDKLOCAL) deploy --require-approval never -c throwaway=true $(CDK_ARGS)

# The end-to-end suite runs the real handlers in-process (the dev server
# and its event source mapping emulator) against LocalStack's DynamoDB and
# SQS; it does not go through the deployed API Gateway (docs/deploy.md).
localstack-test: need-docker
	$(LOCALSTACK_ENV) go test -count=1 -timeout 15m ./e2e/...
