# make test  – lints docs/openapi.yaml, starts the emulators if they are not running, runs every
#              test (Go, then the web app in Chromium), stops what it started.
# make dev   – starts the emulators and the local server with the web app, ready to chat (Ctrl-C stops all).
# make bench – token counting of pathological vs ordinary text, then the per-turn cost benchmark
#              against the emulators (a few minutes; writes docs/bench).
# make bench-retention – the retention sweep over thousands of sessions (a few minutes; writes docs/bench).
# make fuzz  – each fuzz test for FUZZTIME (default 1m); make test runs only their seeds.
# make deploy PROJECT=… [REGION=…] – deploys everything to a project (DRY_RUN=1 prints the commands);
#              see README's Deploy section for the other variables.
# make chatpath – the functions, files and folders one POST /chat runs, counted from coverage,
#              then on the call graph: those on a call to the store, and the climbs back up
#              a file (see docs/architecture.md, "Following a turn").
# make chaos – CHAOS_TURNS (default 300) logical turns through Firestore, model and client
#              faults, then every invariant checked (make test runs a short one: 48 turns).

GO ?= go
# Every package under the race detector but bench/, whose quality fixtures and
# tiny benchmark are measurement code (ten times slower under it); bench/ after.
# The longest packages are named first: go test starts packages in the order
# given, as many at once as there are CPUs, so the system tests (two minutes
# on 2 cores) run beside the rest instead of alone at the end.
LONGTESTS := ./systemtest ./retention
GOTEST ?= $(GO) test -race -count=1 -timeout 20m $(LONGTESTS) $$($(GO) list ./... | grep -v -e "backend/bench$$" -e "backend/systemtest$$" -e "backend/retention$$") && $(GO) test -count=1 -timeout 20m ./bench

.PHONY: test dev emulators bench bench-retention vet deps fuzz tidy-check chaos deploy chatpath

node_modules/.bin/firebase: package.json package-lock.json
	npm ci --no-audit --no-fund
	@touch $@

deps: node_modules/.bin/firebase
	$(GO) mod download

test: deps tidy-check
	npm run --silent lint:api
	npm run --silent check:client
	$(GO) run ./cmd/emulators -- sh -c '$(GOTEST)'
	# The browser tests get emulators started afresh: the emulator's
	# queries slow down the more it holds, and the Go tests fill it.
	$(GO) run ./cmd/emulators -- npm run --silent test:web

# What Ctrl-C stops is built, then run itself: `go run` reports an
# interrupt as a failure even when its program stopped cleanly.
BIN := .bin

emulators: deps
	$(GO) build -o $(BIN)/emulators ./cmd/emulators
	$(BIN)/emulators -v

dev: deps
	npm run --silent build:web
	$(GO) build -o $(BIN)/emulators ./cmd/emulators
	$(GO) build -o $(BIN)/server ./cmd/server
	$(BIN)/emulators -- $(BIN)/server -web web/dist

# go.mod and go.sum are exactly what the code needs.
tidy-check:
	@$(GO) mod tidy -diff || (echo "go.mod/go.sum are not tidy: run go mod tidy" && exit 1)

# Fuzz each target for FUZZTIME (make test runs only their seed corpora).
FUZZTIME ?= 1m
fuzz:
	$(GO) test ./sessions -run '^$$' -fuzz FuzzDecodeRequest -fuzztime $(FUZZTIME)
	$(GO) test ./sessions -run '^$$' -fuzz FuzzPageToken -fuzztime $(FUZZTIME)
	$(GO) test ./history -run '^$$' -fuzz FuzzTokenCount -fuzztime $(FUZZTIME)
	$(GO) test ./history -run '^$$' -fuzz FuzzDrafts -fuzztime $(FUZZTIME)
	$(GO) test ./app -run '^$$' -fuzz FuzzConfigFromEnv -fuzztime $(FUZZTIME)

# Faults between the server and Firestore and the model, and clients that go away (a few minutes).
CHAOS_TURNS ?= 300
chaos: deps
	$(GO) run ./cmd/emulators -- sh -c 'CHAOS_TURNS=$(CHAOS_TURNS) $(GO) test -count=1 -timeout 30m -run "^TestChaos$$" -v ./systemtest'

vet:
	$(GO) vet ./...
	@test -z "$$(gofmt -l .)" || (gofmt -l . && exit 1)

# The retention sweep at scale (a few minutes): seeds, sweeps, verifies, and measures a raw BulkWriter.
bench-retention: deps
	$(GO) run ./cmd/emulators -- $(GO) run ./cmd/bench -retention -out $(BENCH_OUT)

# The full benchmark (a few minutes): tables, bench.json and the chart in docs/bench.
BENCH_OUT ?= docs/bench
bench: deps
	$(GO) test -run '^$$' -bench Text -benchtime 20x ./history
	$(GO) run ./cmd/emulators -- $(GO) run ./cmd/bench -out $(BENCH_OUT)
	$(GO) run ./cmd/bench -bill -out $(BENCH_OUT)

# Deploy everything (see README, Deploy): empty variables take cmd/deploy's defaults.
deploy: deps
	PROJECT='$(PROJECT)' REGION='$(REGION)' TIME_ZONE='$(TIME_ZONE)' SCHEDULE='$(SCHEDULE)' OPENAI_SECRET='$(OPENAI_SECRET)' \
	ENV_FILE='$(ENV_FILE)' RUNTIME='$(RUNTIME)' DRY_RUN='$(DRY_RUN)' $(GO) run ./cmd/deploy

# What one plain POST /chat runs: a build with coverage records it (cmd/chatpath),
# then each function that ran is listed and counted with its file and folder,
# and counted again on the module's call graph (chatpath -paths).
chatpath: deps
	$(GO) build -o $(BIN)/emulators ./cmd/emulators
	$(GO) build -cover -covermode=atomic -coverpkg=./... -o $(BIN)/chatpath ./cmd/chatpath
	rm -rf $(BIN)/chatpath.cov $(BIN)/chatpath.exit && mkdir -p $(BIN)/chatpath.cov $(BIN)/chatpath.exit
	$(BIN)/emulators -- sh -c 'GOCOVERDIR=$(BIN)/chatpath.exit $(BIN)/chatpath -out $(BIN)/chatpath.cov'
	$(GO) tool covdata func -i=$(BIN)/chatpath.cov | awk '$$NF != "0.0%" && $$1 != "total" && $$1 !~ /cmd\/chatpath/' > $(BIN)/chatpath.txt
	@awk '{ split($$1, p, ":"); f[p[1]] } END { printf "one POST /chat ran %d functions in %d files:\n", NR, length(f) }' $(BIN)/chatpath.txt
	@awk '{ n = split($$1, d, "/"); dir = d[1]; for (i = 2; i < n; i++) dir = dir "/" d[i]; ds[dir]++ } \
		END { for (x in ds) printf "  %4d  %s\n", ds[x], x }' $(BIN)/chatpath.txt | sort -k2
	@echo "each function: $(BIN)/chatpath.txt"
	$(GO) run ./cmd/chatpath -paths $(BIN)/chatpath.txt
