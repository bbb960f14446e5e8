# The CDK stack (infra/, its own Go module) and LocalStack. Included from
# the Makefile; see docs/deploy.md. Nothing in `make test` depends on these.
#   make cdk-cli          the pinned CDK CLI (package.json) into ./node_modules
#   make lambdas          dist/api/bootstrap, dist/worker/bootstrap (linux/arm64)
#   make synth            cdk synth (offline; the template lands in cdk.out/)
#   make deploy           cdk deploy (CDK_ARGS="-c alarmEmail=ops@example.com")
#   make test-infra       the infra module's tests, including cdk and cdklocal synth
#   make localstack-up / localstack-deploy / localstack-test / localstack-down

# No telemetry, no notices: synth must work offline and report nothing.
CDK_ENV := CDK_DISABLE_CLI_TELEMETRY=true
CDK := $(CDK_ENV) $(CURDIR)/node_modules/.bin/cdk
CDKLOCAL := $(CDK_ENV) $(CURDIR)/node_modules/.bin/cdklocal
CDK_ARGS ?=
LAMBDA_FUNCTIONS := api worker
LAMBDA_BUILD := CGO_ENABLED=0 GOOS=linux GOARCH=arm64 go build -tags lambda.norpc -trimpath -ldflags="-s -w"

LOCALSTACK_URL := http://127.0.0.1:4566
# LocalStack accepts any credentials; these keep a developer's real ones
# (and their account) out of every LocalStack target.
LOCALSTACK_ENV := AWS_ENDPOINT_URL=$(LOCALSTACK_URL) AWS_REGION=us-east-1 AWS_DEFAULT_REGION=us-east-1 \
	AWS_ACCESS_KEY_ID=test AWS_SECRET_ACCESS_KEY=test AWS_SESSION_TOKEN= AWS_PROFILE=
COMPOSE := docker compose -f localstack/docker-compose.yml
NEED_DOCKER = @command -v docker >/dev/null 2>&1 && docker info >/dev/null 2>&1 || { \
	echo "$@: needs a running Docker engine (LocalStack runs in a container); none found."; \
	echo "$@: the default local stack needs no Docker: make dev (kumo)."; exit 1; }

.PHONY: cdk-cli lambdas synth deploy test-infra localstack-up localstack-deploy localstack-test localstack-down

node_modules/.bin/cdk node_modules/.bin/cdklocal &: package.json package-lock.json
	npm ci --no-audit --no-fund
	@touch node_modules/.bin/cdk node_modules/.bin/cdklocal

cdk-cli: node_modules/.bin/cdk

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
# instead of skipping when the CLI is missing.
test-infra: cdk-cli
	cd infra && $(CDK_ENV) AIJOBS_REQUIRE_CDK_CLI=1 go test -count=1 -timeout 15m ./...
	cd infra && out=$$(gofmt -l .); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	cd infra && go vet ./...

localstack-up:
	$(NEED_DOCKER)
	$(COMPOSE) up -d --wait

localstack-down:
	$(NEED_DOCKER)
	$(COMPOSE) down

localstack-deploy: cdk-cli lambdas
	$(NEED_DOCKER)
	$(LOCALSTACK_ENV) $(CDKLOCAL) bootstrap -c throwaway=true $(CDK_ARGS)
	$(LOCALSTACK_ENV) $(CDKLOCAL) deploy --require-approval never -c throwaway=true $(CDK_ARGS)

# The end-to-end suite runs the real handlers in-process (the dev server
# and its event source mapping emulator) against LocalStack's DynamoDB and
# SQS; it does not go through the deployed API Gateway (docs/deploy.md).
localstack-test:
	$(NEED_DOCKER)
	$(LOCALSTACK_ENV) go test -count=1 -timeout 15m ./e2e/...
