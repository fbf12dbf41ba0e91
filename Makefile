# digest — the two-command quick start is `make demo` and `make test`.
SWIFT ?= swift
DEMO_OUT ?= demo-out

.PHONY: setup setup-tests build demo demo-send test bench bench-postgres bench-rolling bench-send bench-collect bench-compare bench-forget clean

## What building and the demo need (system packages, as root when missing).
setup:
	@scripts/setup.sh

## That, and what only the tests and benchmarks use (PostgreSQL, Chromium).
setup-tests:
	@scripts/setup.sh --tests

build: setup
	$(SWIFT) build

## Sample data → weekly run on SQLite; prints the summary and where everything is.
demo: build
	$(SWIFT) run digest demo --out $(DEMO_OUT)

## The demo's run delivered end to end to the fake FCM server on loopback (throwaway key).
demo-send: build
	DEMO_OUT=$(DEMO_OUT) scripts/demo-send.sh

## Checks the public surface (scripts/public-surface.sh), builds once (debug) and runs every test.
test: setup-tests
	scripts/public-surface.sh
	$(SWIFT) build --build-tests
	SWIFT=$(SWIFT) scripts/test.sh

## Benchmarks (release build; not part of CI). Results go to BENCHMARKS.md.
bench: setup-tests
	scripts/bench.sh
	scripts/bench-images.sh
	scripts/bench-previews.sh
	scripts/bench-postgres.sh
	scripts/bench-rolling.sh
	scripts/bench-collect.sh
	scripts/bench-forget.sh

## The weekly run on PostgreSQL (1M users, one and two workers) against COPY; installs PostgreSQL when
## missing, throwaway cluster; "## Weekly run on PostgreSQL" in BENCHMARKS.md.
bench-postgres: setup-tests
	scripts/bench-postgres.sh

## Rolling runs (issue 14) against the week's run, SQLite (1M users) and PostgreSQL (200k users): one rolling
## run over every zone, then the next hourly run that finds nothing to do; "## Rolling runs" in BENCHMARKS.md.
bench-rolling: setup-tests
	scripts/bench-rolling.sh

## Event collector benchmark: digest collect on SQLite and PostgreSQL, 8 clients, 200 events a request;
## "## Event collector" in BENCHMARKS.md (also a step of make bench).
bench-collect: setup-tests
	scripts/bench-collect.sh

## digest readers forget of 10,000 readers in a 1,000,000-reader SQLite store, the other readers' rows
## checked unchanged; "## Forgetting readers" in BENCHMARKS.md (also a step of make bench).
bench-forget: setup-tests
	scripts/bench-forget.sh

## Template comparison: digest preview --compare over a 1,000-reader demo, identical folders and a one-word
## change in a Polish template; "## Template comparison" in BENCHMARKS.md.
bench-compare: setup
	scripts/bench-compare.sh

## Delivery benchmark: digest send vs wrk against the fake FCM server on loopback ("## Delivery on loopback" in BENCHMARKS.md),
## then at FCM's latency against the Firebase Admin Python SDK ("## Delivery at FCM's latency").
bench-send: setup-tests
	scripts/bench-send.sh
	scripts/bench-send-latency.sh

clean:
	rm -rf .build $(DEMO_OUT) bench-out
