# make test  – starts the emulators if they are not running, runs every test (Go, then the
#              web app in Chromium), stops what it started.
# make dev   – starts the emulators and the local server with the web app, ready to chat (Ctrl-C stops all).
# make bench – the per-turn cost benchmark against the emulators (a few minutes; writes docs/bench).

GO ?= go
GOTEST ?= $(GO) test -race -count=1 -timeout 20m ./...

.PHONY: test dev emulators bench vet deps

node_modules/.bin/firebase: package.json package-lock.json
	npm ci --no-audit --no-fund
	@touch $@

deps: node_modules/.bin/firebase
	$(GO) mod download

test: deps
	$(GO) run ./cmd/emulators -- sh -c '$(GOTEST) && npm run --silent test:web' 

emulators: deps
	$(GO) run ./cmd/emulators -v

dev: deps
	npm run --silent build:web
	$(GO) run ./cmd/emulators -- $(GO) run ./cmd/server -web web

vet:
	$(GO) vet ./...
	@test -z "$$(gofmt -l .)" || (gofmt -l . && exit 1)

# The full benchmark (a few minutes): tables, bench.json and the chart in docs/bench.
BENCH_OUT ?= docs/bench
bench: deps
	$(GO) run ./cmd/emulators -- $(GO) run ./cmd/bench -out $(BENCH_OUT)
