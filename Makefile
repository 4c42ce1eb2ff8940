# mcpconform: `make run` runs the full suite against the bundled reference
# gateway on SQLite; `make test` runs every test (PostgreSQL where available).
GO      ?= go
BIN     := bin/mcpconform
OUT     ?= mcpconform-report
RUNARGS ?=

.PHONY: build run test test-race vet bench fuzz clean

build:
	$(GO) build -o $(BIN) ./cmd/mcpconform

run: build
	./$(BIN) run --target reference --store sqlite --out $(OUT) $(RUNARGS)

# The gateway and store packages run under the race detector; the whole
# conformance suite runs once against SQLite and, where DATABASE_URL or a
# Docker engine is there, against PostgreSQL.
test: vet
	$(GO) test -race -timeout 30m ./reference/... ./drivers/... ./catalog/... ./reports/... ./bugmap/...
	$(GO) test -timeout 30m ./cmd/... ./runner/... ./steps/... ./features/...

vet:
	$(GO) vet ./...

bench:
	$(GO) test -run '^$$' -bench . -benchtime 2000x ./...

fuzz:
	$(GO) test -run '^$$' -fuzz FuzzJSON -fuzztime 20s ./reference/canonical/
	$(GO) test -run '^$$' -fuzz FuzzParse -fuzztime 20s ./reference/idemkey/

clean:
	rm -rf bin $(OUT) mcpconform-state
