# Targets mirror the README. CI runs .ci/run, which calls `make test`.
GO ?= go

.PHONY: demo generate-example policy-example test bench generate fmt

# Run the main job end to end: the compatible server with the bundled data
# center, the daemon with an embedded etcd, ckecli as the operator.
demo:
	$(GO) run ./cmd/demo

# The offline generator on the bundled data center.
generate-example:
	$(GO) run ./cmd/ckecli sabakan generate \
		--template examples/template.yml \
		--machines examples/machines.json \
		--constraints examples/constraints.json \
		--now 2026-01-02T00:00:00Z --explain text

# The same with the example placement policy (static metric values).
policy-example:
	$(GO) run ./cmd/ckecli sabakan generate \
		--template examples/template.yml \
		--machines examples/machines.json \
		--constraints examples/constraints.json \
		--policy examples/policy.yml \
		--now 2026-01-02T00:00:00Z --explain text

# Every test: vet, unit, golden, property and fuzz seeds.
test:
	test -z "$$(gofmt -l $$(git ls-files '*.go'))" || (gofmt -l $$(git ls-files '*.go'); exit 1)
	$(GO) vet ./...
	$(GO) test -race -count=1 ./...

bench:
	$(GO) test -run '^$$' -bench . -benchmem ./generator/ ./sabakan/

generate:
	$(GO) generate ./...

fmt:
	gofmt -w $$(git ls-files '*.go')
