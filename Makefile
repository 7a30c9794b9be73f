# shardline: the two commands first.
#   make run    run the pipeline locally on DynamoDB Local, kinesalite and a local S3 (s3rver)
#   make test   vet and run every test (DynamoDB Local, kinesalite and the local S3 included)

GO      ?= go
NPM     ?= npm
BIN     := bin
LAMBDA_FLAGS := -tags lambda.norpc -trimpath -ldflags='-s -w -buildid='

export CDK_DISABLE_CLI_TELEMETRY := true
export JSII_SILENCE_WARNING_DEPRECATED_NODE_VERSION := 1
export JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION := 20
export JSII_DEPRECATED := quiet

.PHONY: run test test-lanes build synth deploy bench fuzz deps java vet fmt clean

## run: start DynamoDB Local, kinesalite and a local S3, create the table and stream, serve the API on localhost:8080, poll the stream, replay events/
## (bin/shardline-dev, from local/cmd/shardline-dev; it also builds the operator's bin/shardline, for the commands the docs show beside it)
run: deps java
	$(GO) build -o $(BIN)/shardline ./cmd/shardline
	$(GO) build -o $(BIN)/shardline-dev ./local/cmd/shardline-dev
	./$(BIN)/shardline-dev $(ARGS)

## test: gofmt check, go vet, and every test; the race detector on everything but the CDK app
## (its tests drive jsii's Node process, and instrumenting them finds nothing of ours), the
## browser tests and the bench harness (PLAIN), and the query and ingest tests named in NORACE, below
test: deps java fmt
	$(GO) run -trimpath ./testkit/cmd/withddb $(MAKE) --no-print-directory test-lanes

# test-lanes: make test's three lanes, run under one DynamoDB Local that
# withddb starts (each test binary keeps a database of its own in it, under
# an access key of its own; testddb.SharedEnv). Run alone, each binary
# starts its own engine. Two dozen binaries use DynamoDB Local, and each
# Java process cost about 2.5 CPU-seconds to start, and more to warm up.
test-lanes:
	$(GO) test $(TESTFLAGS) -parallel 8 -run '$(NORACE)' ./internal/ingest ./internal/query ./internal/archive ./internal/counts ./pkg/producer ./ops/heatsim & sims=$$!; \
	( nice $(VET); v=$$?; \
	  $(GO) test $(TESTFLAGS) $(PLAIN); p=$$?; \
	  nice $(GO) test $(TESTFLAGS) ./infra/...; i=$$?; \
	  [ $$v -eq 0 ] && [ $$p -eq 0 ] && [ $$i -eq 0 ] ) & plain=$$!; \
	$(GO) test $(TESTFLAGS) -race -skip '$(NORACE)' $(FIRST) $$($(GO) list ./... | grep -v -e '/infra' $(FIRST:./%=-e '/%$$') $(PLAIN:./%=-e '/%$$')); race=$$?; \
	wait $$sims; sims=$$?; wait $$plain; plain=$$?; [ $$race -eq 0 ] && [ $$sims -eq 0 ] && [ $$plain -eq 0 ]

# Flags of every go test make test runs: -ldflags=-w links the test binaries
# without DWARF, which no test reads (a panic's trace comes from the
# runtime's own tables): a race-instrumented ingest test binary linked in 1.9 CPU-s where
# it took 2.7, and make test links about 60.
TESTFLAGS = -count=1 -trimpath -ldflags=-w $(TIMEOUT)

# A test binary's time limit: go test's default of 10 minutes is a wall
# clock, and a busy machine (other jobs beside CI) slowed the ingest
# simulations past it once, though they take about 4 minutes alone. The
# simulations' verdicts do not depend on the machine's speed
# (testkit/simtime); their limit must not either, within CI's 90 minutes.
TIMEOUT := -timeout 45m

# The tests without the race detector run beside the race run: NORACE's
# from the start (the ingest package's simulations are the longest path,
# and -parallel 8 starts them all at once, so that the longest, the ramp
# on quarter-nominal keys, is not left to run last, alone: they run on
# virtual clocks, so sharing the CPU changes how long they take, never
# their verdicts),
# go vet and the CDK app's at a lower priority. vet builds with -trimpath,
# as the tests do, so on a fresh machine the non-race packages it compiles
# are theirs too.
#
# -trimpath: what is compiled and linked does not depend on where the clone
# is, so a fresh clone reuses the build cache (building the race-instrumented
# test binaries of a fresh clone took 75 s without it, 28 s with it).
#
# The packages whose tests under the detector take longest, named first so
# that they start first: longest first packs go test's -p slots best.
FIRST := ./internal/ingest ./internal/counts ./internal/query
# Packages tested without the race detector, after vet, beside the race
# run: the browser tests, whose time is Chromium's and whose Go side (the
# explorer's and the query function's handlers) runs under the detector in
# those packages' own tests (the detector took them from 47 s to 129 s,
# and 82 s of CPU where 35 did), and the benchmark harness, which ships in
# no function.
PLAIN := ./ops/explorer/browsertest ./bench/benchrun
# Five of the query package's tests do the work of one reader, one request
# after the other, on a CPU the race detector multiplies: the reference tests
# page the API thousands of times, each answer checked against the OpenAPI
# document (kin-openapi compiles a schema per value it checks), and the
# payload tests copy answers of up to 6 MB (the detector instruments every
# copy). Under it they took 80 s of the package's 96, and 75 to 80 % of their
# CPU was the detector's. They run without it, beside the rest; the
# concurrent paths they read through (scatter-gather, a page's parallel
# queries) run under it in the package's other tests, and
# `go test -race ./...` still runs them all.
#
# The property tests of every error answer (300 requests each, every
# answer checked against the OpenAPI document) and the filtered read are
# one reader too, and run without it for the same reason; so is the
# reference test of days without GSI copies (144 walks, 11 of its 20 CPU-s
# the detector's), and the listing past a 5 MiB quarantined body, which
# one writer stores and one reader pages (6 of its 8 CPU-s were the
# detector's, on the body's copies and gzip); the quarantine listing runs
# under it in TestQuarantineListing and its neighbours.
#
# The archive's 3,200 quiet sources go through the real ingest handler
# first (about 7 bookkeeping requests each of first-of-day setup; at 5,000, 48 s of the
# package's 50 under the detector): one writer, one batch after the other,
# whose concurrent setup runs under the detector in the ingest package.
#
# The counts package's reference property test (random event sets
# delivered twice, read at every interval and grouping), its overflow
# test (a source with thousands of types) and its read-unit sizing are
# one writer and one reader too: 44 s of the package's 150 under the
# detector. The fold's and the roll-up's concurrent requests, and
# concurrent counter invocations, run under it in the package's other
# tests (TestLSMExact, TestChainConcurrentInvocations,
# TestRollupInBoundedSteps). Its tests of an answer's series and of the
# by-type tally's memory are one goroutine's arithmetic, no DynamoDB:
# 3.3 s under the detector, 0.6 without; a tally and its ranker are one
# read's own, and reads by type run at once under it in
# TestRollupInBoundedSteps.
#
# The producer's two payload-limit tests are one writer too: a 5.5 MB
# body of 1,000 escaped events sent through the local server
# (TestHTTPLambdaPayload) and 1,200 small and 12 large events put into
# kinesalite (TestKinesisBatchLimits). The detector took the producer's
# CPU in them from 1.6 s to 15.5 s, for bytes copied and encoded one
# after another. Send makes its requests one after the other; the Kinesis
# producer's hand-off from Put to its sender, Flush and Close, run under
# the detector in the package's other Kinesis tests (TestKinesisBackPressure,
# TestKinesisPutRacingClose, TestKinesisCloseFlushes), and the local
# server's handler in TestHTTPLocalServer.
#
# The ingest package's largest simulations (overload, the two ramps, two
# sources on one partition, quarantine flood, midnight, the fault mixes), and the
# 8,000 events of TestShardSpread (20,000 took 77 s under it), run without
# it too: they push 190,000 events through the real handlers, whose
# per-event work the detector multiplies (the package took 6 minutes under
# it), and they run on a virtual clock, so a slower run changes nothing
# they measure. The handlers' concurrent paths run under the detector in
# the package's other tests (the throttled-source simulation, the deadline,
# redeliveries, new sources set up in parallel).
#
# The ingest package's request-size tests, TestPayloadLimit (bodies of 4.7
# to 6.3 MB) and TestBadInputThroughTheAPI (10 MB bodies, 10,000 events,
# 10,000 levels of nesting), send one request at a time, and the detector
# instruments every copy and parse of those bodies: 3.5 of
# TestPayloadLimit's 4.1 s of Go CPU, 1.2 of TestBadInputThroughTheAPI's
# 1.4. A request's concurrent setup and writes run under it in the
# package's other API tests (the slow setup, the API's time budget).
#
# The heat model's own simulations (ops/heatsim: one source at 50,000
# events a second, a Zipf fleet with a burst, slow isolation, size splits,
# the ramp's acceptance and figures) are one goroutine's arithmetic, no
# DynamoDB and no goroutines: 21 CPU-s under the detector, 8 without
# (a DynamoDB Local started for the binary in both). Its
# tests that drive the real shard registry run under it.
NORACE := ^(TestPathsAgreeWithReference|TestDayAndHourBucketsReadAlike|TestPagesFitLambdaPayload|TestQuarantinePagesFitLambdaPayload|TestCountsFitLambdaPayload|TestGSIOverloadIsSpreadOnce|TestAdaptiveShardingUnderARamp|TestAdaptiveShardingUnderARampOnQuarterKeys|TestHotSourcesSharingAPartitionAreSpread|TestQuarantineFloodIsSpread|TestMidnightStartOfManySources|TestFaultMixesLoseAndDuplicateNothing|TestShardSpread|TestCoarseClocksAreNotHeat|TestEveryErrorAnswerFitsLambda|TestEveryQueryErrorFitsLambda|TestFilteredPagesAlwaysProgress|TestQuietSourcesShareObjects|TestCountsMatchAReference|TestCounterOverflow|TestDayChartReadUnitsAtMany|TestHTTPLambdaPayload|TestKinesisBatchLimits|TestDaysWithoutCopiesReadWhole|TestQuarantineLargeBodyDoesNotBlockTheListing|TestSeriesFit|TestTallyByTypeMemory|TestPayloadLimit|TestBadInputThroughTheAPI|TestOneSourceAtFiftyThousand|TestZipfWithBurst|TestSlowIsolation|TestSizeSplitsSetThePartitionFloor|TestRampAcceptance|TestRampFigures)$$

# go vet as make test runs it, and make vet.
VET = $(GO) vet -trimpath ./...

vet: fmt
	$(VET)

fmt:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go' -not -path './node_modules/*')); \
	  if [ -n "$$out" ]; then echo "gofmt would change: $$out"; exit 1; fi

## build: the five Lambda binaries for provided.al2023 on arm64
build:
	GOOS=linux GOARCH=arm64 CGO_ENABLED=0 $(GO) build $(LAMBDA_FLAGS) -o $(BIN)/ingest/bootstrap ./functions/ingest
	GOOS=linux GOARCH=arm64 CGO_ENABLED=0 $(GO) build $(LAMBDA_FLAGS) -o $(BIN)/query/bootstrap ./functions/query
	GOOS=linux GOARCH=arm64 CGO_ENABLED=0 $(GO) build $(LAMBDA_FLAGS) -o $(BIN)/counter/bootstrap ./functions/counter
	GOOS=linux GOARCH=arm64 CGO_ENABLED=0 $(GO) build $(LAMBDA_FLAGS) -o $(BIN)/countfold/bootstrap ./functions/countfold
	GOOS=linux GOARCH=arm64 CGO_ENABLED=0 $(GO) build $(LAMBDA_FLAGS) -o $(BIN)/archive/bootstrap ./functions/archive
	@ls -l $(BIN)/ingest/bootstrap $(BIN)/query/bootstrap $(BIN)/counter/bootstrap $(BIN)/countfold/bootstrap $(BIN)/archive/bootstrap

## fuzz: run each fuzz target for FUZZTIME (default 30s)
FUZZTIME ?= 30s
fuzz:
	$(GO) test ./pkg/bucketing -run '^$$' -fuzz FuzzKeys -fuzztime $(FUZZTIME)
	$(GO) test ./internal/cloudevent -run '^$$' -fuzz FuzzParse -fuzztime $(FUZZTIME)
	$(GO) test ./internal/query -run '^$$' -fuzz FuzzParams -fuzztime $(FUZZTIME)

## bench: shardline against the naive design, in one run; results in bench/results/
BENCHSTAT := $(GO) run golang.org/x/perf/cmd/benchstat@v0.0.0-20260908200009-22c9c6c9d4da
bench: deps java
	@mkdir -p bench/results
	@echo "handler cost per event, storage excluded (6 runs), against the pre-optimisation baseline:"
	$(GO) test -run '^$$' -bench 'HandlerPerEvent' -benchtime 100x -count 6 ./internal/ingest \
	  | grep -E '^(goos|goarch|pkg|cpu|Benchmark)' > bench/results/handler.txt
	$(BENCHSTAT) bench/results/handler-baseline.txt bench/results/handler.txt | tee bench/results/handler-benchstat.txt
	$(GO) test -run '^$$' -bench . -benchmem ./internal/cloudevent ./internal/query ./pkg/... \
	  | grep -E '^(Benchmark|ok)' | tee bench/results/micro.txt
	@echo "retry amplification: four writers 2.7x over one key of the partition model, paced and blind:"
	$(GO) test -run '^$$' -bench 'RetryAmplification' -benchtime 3x ./internal/writer \
	  | grep -E '^(goos|goarch|pkg|cpu|Benchmark)' | tee bench/results/retry.txt
	$(GO) run ./bench/cmd/shardline-bench -out bench/results

CDK := tools/node_modules/.bin/cdk --no-notices

## synth: build the functions and synthesize the stack into cdk.out (cdk-nag runs here)
synth: deps build
	$(CDK) synth --quiet $(CDK_ARGS)
	@echo "template: cdk.out/$$(ls cdk.out | grep -m1 '.template.json$$')"

## deploy: deploy the stack with the credentials in your environment (needs a bootstrapped account)
deploy: deps build
	$(CDK) deploy --require-approval broadening $(CDK_ARGS)

## deps: Go modules and the npm tools in tools/ (DynamoDB Local, kinesalite, s3rver, the CDK CLI, the IAM evaluator of the tenant tests), pinned by go.sum and tools/package-lock.json
deps: tools/node_modules/.package-lock.json
	$(GO) mod download

tools/node_modules/.package-lock.json: tools/package.json tools/package-lock.json
	$(NPM) ci --prefix tools --no-audit --no-fund --loglevel=error

## java: DynamoDB Local runs on Java 17 or later
java:
	@command -v java >/dev/null 2>&1 || { echo "Java is missing: install it (apt-get install -y default-jre-headless) and run make again"; exit 1; }

clean:
	rm -rf $(BIN) cdk.out
