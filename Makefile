# Targets mirror the README. CI runs .ci/run, which calls `make test`.
GO ?= go

.PHONY: demo generate-example policy-example test test-generated test-prepare test-ckeref test-ckeserver bench bench-ckeref generate fmt fuzz build image bump-cke release release-check release-tools lint check-deadcode

# Run the main job end to end: the compatible server with the bundled data
# center, the daemon with an embedded etcd, ckegenctl as the operator.
demo:
	$(GO) run ./cmd/demo

# The offline generator on the bundled data center.
generate-example:
	$(GO) run ./cmd/ckegenctl sabakan generate \
		--template examples/template.yml \
		--machines examples/machines.json \
		--constraints examples/constraints.json \
		--now 2026-01-02T00:00:00Z --explain text

# The same with the example placement policy (static metric values).
policy-example:
	$(GO) run ./cmd/ckegenctl sabakan generate \
		--template examples/template.yml \
		--machines examples/machines.json \
		--constraints examples/constraints.json \
		--policy examples/policy.yml \
		--now 2026-01-02T00:00:00Z --explain text

# Every test: formatting, generated code, vet, unit, golden, property and
# fuzz seeds, mtest's processes, then the differential test against CKE
# v1.35.4 (test-ckeref). test-prepare first builds what the tests run for
# real and what takes minutes to build cold, so that no test waits for a
# build within go test's time limit. The tests' JSON goes through
# internal/testutil/testsummary: a line per package, every failure in
# full, and at the end every skipped test with its reason ("SKIPPED: ...")
# and the counts. Then make release-check: a release for this machine's
# architecture, built twice and checked (below).
# The conformance test of sabakan/schema.graphql compares it with sabakan's
# own schema: ../shared/sabakan/schema.graphqls where that file exists, or
# SABAKAN_UPSTREAM_SCHEMA; without either it skips, and says so here.
# Under CI=true it is that path whether the file exists or not, so that a
# missing file fails naming it.
SABAKAN_UPSTREAM_SCHEMA ?= $(if $(filter true,$(CI)),$(abspath $(CURDIR)/../shared/sabakan/schema.graphqls),$(wildcard $(abspath $(CURDIR)/../shared/sabakan/schema.graphqls)))
export SABAKAN_UPSTREAM_SCHEMA
# go test's time limit for each package: mtest/ (every part a process,
# building its binaries first, CKE's own server among them) runs after the
# others, with its own; the others keep go test's default.
TEST_TIMEOUT ?= 10m
TEST_TIMEOUT_MTEST ?= 30m
TEST_PACKAGES = $(shell $(GO) list ./... | grep -v '/mtest$$')
TEST_PACKAGES_MTEST = ./mtest/
# test-ckeref, run by testsummary so that its skip is listed at the end;
# through a variable, so that `make -n test` prints the line and runs no
# test (make runs a line that names MAKE's variable itself even under -n).
TEST_CKEREF = $(MAKE) --no-print-directory test-ckeref
TEST_CKESERVER = $(MAKE) --no-print-directory test-ckeserver
test: test-generated test-prepare
	@[ -n "$(SABAKAN_UPSTREAM_SCHEMA)" ] || echo "note: TestSchemaConformance skips: set SABAKAN_UPSTREAM_SCHEMA to sabakan's gql/schema.graphqls (github.com/cybozu-go/sabakan v3.1.9); CI does"
	test -z "$$(gofmt -l $$(git ls-files '*.go'))" || (gofmt -l $$(git ls-files '*.go'); exit 1)
	$(GO) vet ./...
	@$(MAKE) --no-print-directory lint check-deadcode
	@echo "go test -race -count=1: -timeout $(TEST_TIMEOUT) ./... but mtest, -timeout $(TEST_TIMEOUT_MTEST) $(TEST_PACKAGES_MTEST), then test-ckeref and test-ckeserver, through internal/testutil/testsummary"
	@$(GO) run ./internal/testutil/testsummary \
		"$(GO) test -json -race -count=1 -timeout $(TEST_TIMEOUT) $(TEST_PACKAGES)" \
		"$(GO) test -json -race -count=1 -timeout $(TEST_TIMEOUT_MTEST) $(TEST_PACKAGES_MTEST)" \
		"$(TEST_CKEREF)" \
		"$(TEST_CKESERVER)"
	@$(MAKE) --no-print-directory release-check

# Generated code (sabakan/generated.go, fakesabakan/internal/graph/) must
# be what `go generate ./...` makes of the schemas, the operations,
# genqlient.yaml and fakesabakan/gqlgen.yml in the tree.
GENERATED = sabakan/generated.go fakesabakan/internal/graph
test-generated:
	@echo "test-generated: go generate ./... must leave the generated code as it is"
	@before=$$(find $(GENERATED) -type f | LC_ALL=C sort | xargs sha256sum) && \
	$(GO) generate ./... && \
	after=$$(find $(GENERATED) -type f | LC_ALL=C sort | xargs sha256sum) && \
	if [ "$$before" != "$$after" ]; then \
		echo "test-generated: the generated code was not what go generate ./... makes of its sources; it has rewritten it: commit that (git diff -- $(GENERATED))" >&2; \
		git status --short -- $(GENERATED) >&2; exit 1; \
	fi

# Lint (.golangci.yml): golangci-lint, pinned in tools/go.mod, a module of
# its own so that no linter enters the root module's requirements (which
# ckeserver/ inherits, and with them cke's build). The root module, the
# tools' own code, then ckeserver/ and ckeref/ with CKE from the proxies of
# test-ckeref; a machine that cannot download CKE skips those two and
# says so (under CI that fails). The first run builds golangci-lint (minutes). A
# second golangci-lint on the machine is waited for.
GOLANGCI_LINT = $(GO) tool -modfile=$(CURDIR)/tools/go.mod golangci-lint
lint:
	$(GOLANGCI_LINT) run --allow-serial-runners ./...
	cd tools && $(GOLANGCI_LINT) run --allow-serial-runners --config $(CURDIR)/.golangci.yml ./deadcheck
	@for m in ckeserver ckeref; do \
		if ! (cd $$m && $(CKEREF_ENV) $(GO) mod download); then \
			if [ "$${CI:-}" = true ]; then echo "lint: $$m: cannot download github.com/cybozu-go/cke" >&2; exit 1; fi; \
			echo "lint: $$m: SKIPPED: github.com/cybozu-go/cke cannot be downloaded here"; continue; \
		fi; \
		echo "$(GOLANGCI_LINT) run ./... (in $$m)"; \
		(cd $$m && $(CKEREF_ENV) $(GOLANGCI_LINT) run --allow-serial-runners --config $(CURDIR)/.golangci.yml ./...) || exit 1; \
	done

# Dead code: deadcode (golang.org/x/tools/cmd/deadcode, pinned in
# tools/go.mod) over every binary, through tools/deadcheck: the main
# packages of the root module outside the test harnesses (its commands,
# ckebump and capture, the maintainers' tools), and cke, built from
# ckeserver/. A function is dead when no binary reaches
# it (one that only cke calls is live), and reported unless it is in a
# test harness (mtest/, internal/testutil/) or generated code, or a
# generated file names it. ckeref/ is a test harness too: its tests and
# its command do not count as callers. What only tests call belongs in a
# _test.go file. Without CKE's module (as for test-ckeserver) it is
# skipped, and under CI it fails.
check-deadcode:
	@cd ckeserver && if ! $(CKEREF_ENV) $(GO) mod download; then \
		if [ "$${CI:-}" = true ]; then echo "check-deadcode: cannot download github.com/cybozu-go/cke for cke" >&2; exit 1; fi; \
		echo "check-deadcode: SKIPPED: github.com/cybozu-go/cke cannot be downloaded here, and without cke the root module's functions only cke calls look dead"; exit 0; \
	fi; \
	echo "check-deadcode: deadcode over the main packages of . and ckeserver/ outside the test harnesses"; \
	cd $(CURDIR)/tools && $(GO) test ./deadcheck && $(CKEREF_ENV) $(GO) run ./deadcheck -go "$(GO)" -root "$(CURDIR)" -modfile go.mod . ckeserver

# What the tests run for real and take minutes to build cold
# (internal/testutil/prepare), each with its own time limit: the
# kube-apiserver and CKE v1.35.4's cke and ckecli into the user cache
# (kept while their modules do not change), the image's packages into Go's
# build cache. Outside CI, what cannot be had is skipped with a message,
# and so are the tests that need it; under CI=true that fails.
test-prepare:
	@echo "test-prepare: compiling internal/testutil/prepare (cold: under a minute), then building..."
	@$(GO) run ./internal/testutil/prepare

# ckeref/ is a module of its own that imports CKE v1.35.4 (the reference
# of docs/models.md). Here CKE comes from ../shared/goproxy (a file module proxy;
# SHARED_GOPROXY names another) when it exists; elsewhere from the public proxy. Outside CI, a machine that
# cannot download CKE skips these tests with a message; under CI it fails.
# Without -race: CKE's generator is single-threaded code we only call, and
# the race detector would make the test several times slower.
SHARED_GOPROXY ?= $(abspath $(CURDIR)/../shared/goproxy)
ifneq ($(wildcard $(SHARED_GOPROXY)),)
CKEREF_ENV = GOPROXY="file://$(SHARED_GOPROXY),$$($(GO) env GOPROXY)" GONOSUMDB=github.com/cybozu-go/cke
endif
test-ckeref:
	@cd ckeref && if ! $(CKEREF_ENV) $(GO) mod download; then \
		if [ "$${CI:-}" = true ]; then echo "ckeref: cannot download github.com/cybozu-go/cke v1.35.4" >&2; exit 1; fi; \
		echo "ckeref: SKIPPED: github.com/cybozu-go/cke v1.35.4 cannot be downloaded here (no ../shared/goproxy, no proxy serving it)"; exit 0; \
	fi; \
	$(CKEREF_ENV) $(GO) vet ./... && $(CKEREF_ENV) $(GO) test -count=1 ./...

# ckeserver/ is CKE v1.35.4's server with ckegen's step inside, a module of
# its own (its go.mod replaces ckegen with this repository and keeps CKE's
# etcd and Kubernetes versions). Its tests run its integrator against CKE's
# own on a real etcd; test-prepare has built its cke for mtest. CKE comes
# as for ckeref.
test-ckeserver:
	@cd ckeserver && if ! $(CKEREF_ENV) $(GO) mod download; then \
		if [ "$${CI:-}" = true ]; then echo "ckeserver: cannot download github.com/cybozu-go/cke v1.35.4" >&2; exit 1; fi; \
		echo "ckeserver: SKIPPED: github.com/cybozu-go/cke v1.35.4 cannot be downloaded here (no ../shared/goproxy, no proxy serving it)"; exit 0; \
	fi; \
	$(CKEREF_ENV) $(GO) vet ./... && $(CKEREF_ENV) $(GO) test -count=1 ./...

# Move to CKE's release VERSION (docs/inside-cke.md "Keeping up with
# CKE"): make bump-cke VERSION=v1.35.5. internal/ckebump moves
# ckeserver/go.mod and go.sum (the exclude lines computed again), the
# module that builds CKE's own binaries for the tests, ckeref/, the
# constants and this file's messages, with CKE's module from the proxies
# of test-ckeref, then lists the lines of documentation that name the old
# release. Here VERSION is CKE's, given on the command line (elsewhere in
# this file it is ckegen's own).
bump-cke:
	@case "$(origin VERSION)" in "command line"|environment) ;; \
		*) echo "bump-cke: name CKE's release: make bump-cke VERSION=v1.35.5" >&2; exit 2;; esac
	$(CKEREF_ENV) $(GO) run ./internal/ckebump "$(VERSION)"

# Every fuzz target (func Fuzz... in a _test.go file) for FUZZTIME each, one
# after the other. Their seed corpora already run in `make test`. A failing
# input is written under the package's testdata/fuzz/ and fails the run.
FUZZTIME ?= 1m
fuzz:
	@set -e; for f in $$(git grep -l '^func Fuzz' -- '*_test.go'); do \
		for t in $$(sed -n 's/^func \(Fuzz[A-Za-z0-9_]*\)(.*/\1/p' $$f); do \
			echo "== $$t in ./$$(dirname $$f) for $(FUZZTIME)"; \
			$(GO) test -run '^$$' -fuzz "^$$t\$$" -fuzztime $(FUZZTIME) -fuzzminimizetime 10s ./$$(dirname $$f); \
		done; \
	done

bench:
	$(GO) test -run '^$$' -bench . -benchmem ./generator/ ./sabakan/

# CKE v1.35.4's generator beside ckegen's (ckeref/bench_test.go). CKE's
# Generate at 20,000 machines takes most of a minute: one iteration each.
bench-ckeref:
	cd ckeref && $(CKEREF_ENV) $(GO) test -run '^$$' -bench . -benchmem -benchtime=1x -timeout 60m ./

generate:
	$(GO) generate ./...

fmt:
	gofmt -w $$(git ls-files '*.go')

# Versions (deploy/version.sh, docs/install.md "Versions"): VERSION is the
# tag on HEAD when it names a release, v0.x.y exactly, and devel otherwise;
# REVISION is HEAD's commit. Every binary `make build` and `make image`
# build is stamped with both (each --version prints them, ckegen's /version
# answers the version), and the image is tagged with VERSION:
# deploy/systemd/ckegen.env names what an untagged checkout builds,
# localhost/ckegen:devel. Computed once, unless given.
ifeq ($(origin VERSION),undefined)
VERSION := $(shell sh $(CURDIR)/deploy/version.sh)
endif
ifeq ($(origin REVISION),undefined)
REVISION := $(shell git rev-parse HEAD 2>/dev/null)
endif
LDFLAGS = -s -w -X github.com/ckegen/ckegen/internal/version.Version=$(VERSION) \
	-X github.com/ckegen/ckegen/internal/version.Revision=$(REVISION)

# What a site installs (docs/install.md): ckegen (the daemon), ckegenctl
# (the CLI) and cke, CKE's server with ckegen inside, built from ckeserver/
# on the CKE release its go.mod requires (CKE_VERSION), which comes as for
# test-ckeref: from ../shared/goproxy when it exists, else from GOPROXY.
# Static (CGO_ENABLED=0), -trimpath, stripped and stamped. fakesabakan is
# a test server: it is not shipped. A machine that cannot have CKE's
# module is told so before anything is built.
BIN_DIR ?= $(CURDIR)/bin
CKE_VERSION = $(shell awk '$$1 == "github.com/cybozu-go/cke" { print $$2; exit }' $(CURDIR)/ckeserver/go.mod)
define build-binaries
	@cd ckeserver && $(CKEREF_ENV) $(GO) mod download github.com/cybozu-go/cke || { \
		echo "$@: cannot have github.com/cybozu-go/cke $(CKE_VERSION), the CKE release cke (CKE's server with ckegen inside, ckeserver/) is built on:" \
			"$(if $(CKEREF_ENV),it is neither in $(SHARED_GOPROXY) nor served by GOPROXY,there is no $(SHARED_GOPROXY) and GOPROXY does not serve it);" \
			"put the module in that file module proxy (github.com/cybozu-go/cke/@v/$(CKE_VERSION).info, .mod, .zip) or set GOPROXY to a proxy that serves it" >&2; \
		exit 1; }
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags "$(LDFLAGS)" -o "$(abspath $(1))/" ./cmd/ckegen ./cmd/ckegenctl
	cd ckeserver && $(CKEREF_ENV) CGO_ENABLED=0 $(GO) build -trimpath -ldflags "$(LDFLAGS)" -o "$(abspath $(1))/cke" ./cmd/cke
endef

build:
	mkdir -p "$(BIN_DIR)"
	$(call build-binaries,$(BIN_DIR))
	@echo "build: ckegen, ckegenctl and cke $(VERSION) (commit $(REVISION)) in $(BIN_DIR)"

# The container image (Containerfile; docs/install.md): the binaries of
# build, with the CA certificates, the license, the user 10000 and its
# data directory, laid out in a staging directory, then an image FROM
# scratch that only copies them in. podman, or docker where that is what
# is installed. IMAGE_LICENSE is the SPDX expression of the licenses label.
IMAGE ?= localhost/ckegen:$(VERSION)
IMAGE_LICENSE ?= Apache-2.0
IMAGE_STAGE ?= $(CURDIR)/bin/image
CONTAINER_ENGINE ?= $(shell command -v podman 2>/dev/null || command -v docker 2>/dev/null)
CA_BUNDLE ?= /etc/ssl/certs/ca-certificates.crt

image:
	@test -n "$(CONTAINER_ENGINE)" || { echo "image: neither podman nor docker is installed (apt-get install podman)" >&2; exit 1; }
	@test -s "$(CA_BUNDLE)" || { echo "image: no CA certificates at $(CA_BUNDLE) (apt-get install ca-certificates, or set CA_BUNDLE)" >&2; exit 1; }
	rm -rf "$(IMAGE_STAGE)"
	mkdir -p "$(IMAGE_STAGE)/lib" "$(IMAGE_STAGE)/state/ckegen"
	$(call build-binaries,$(IMAGE_STAGE))
	cp deploy/image/passwd deploy/image/group LICENSE "$(IMAGE_STAGE)/"
	cp "$(CA_BUNDLE)" "$(IMAGE_STAGE)/ca-certificates.crt"
	chmod 0644 "$(IMAGE_STAGE)/passwd" "$(IMAGE_STAGE)/group" "$(IMAGE_STAGE)/LICENSE" "$(IMAGE_STAGE)/ca-certificates.crt"
	chmod 0755 "$(IMAGE_STAGE)/ckegen" "$(IMAGE_STAGE)/ckegenctl" "$(IMAGE_STAGE)/cke"
	chmod 0755 "$(IMAGE_STAGE)/lib"
	chmod 0700 "$(IMAGE_STAGE)/state/ckegen"
	-chown 10000:10000 "$(IMAGE_STAGE)/state/ckegen" 2>/dev/null
	$(CONTAINER_ENGINE) build --file Containerfile --build-arg VERSION="$(VERSION)" \
		--build-arg LICENSE="$(IMAGE_LICENSE)" --tag "$(IMAGE)" "$(IMAGE_STAGE)"
	@echo "image: $(IMAGE) ($(VERSION), commit $(REVISION))"

# A release (RELEASE.md, docs/install.md): make release VERSION=v0.1.0
# writes DIST (dist/): for each of RELEASE_ARCHES a .tar.gz with ckegen,
# ckegenctl, cke, the LICENSE and the README, named after the CKE release
# cke is built on; a .deb (deploy/nfpm.yaml); a CycloneDX SBOM per binary;
# the image as an OCI archive; then SHA256SUMS. deploy/release.sh makes
# each; every time stamp is the commit's (SOURCE_DATE_EPOCH), so the same
# commit and VERSION give the same bytes. A release is made of a clean
# tree: what is not committed would be in no commit.
# The tools (nfpm, cyclonedx-gomod) are pinned in tools/go.mod, a module of
# their own, and built into TOOLS_BIN, in the user's cache (a bin/ in the
# repository is what make build writes); none is in a shipped binary.
DIST ?= $(CURDIR)/dist
RELEASE_ARCHES ?= amd64 arm64
TOOLS_BIN ?= $(or $(XDG_CACHE_HOME),$(HOME)/.cache)/ckegen/release-tools
SOURCE_DATE_EPOCH ?= $(shell git log -1 --format=%ct 2>/dev/null)
RELEASE_ENV = VERSION="$(VERSION)" REVISION="$(REVISION)" LDFLAGS="$(LDFLAGS)" \
	SOURCE_DATE_EPOCH="$(SOURCE_DATE_EPOCH)" CKE_VERSION="$(CKE_VERSION)" GO="$(GO)" \
	NFPM="$(TOOLS_BIN)/nfpm" CYCLONEDX_GOMOD="$(TOOLS_BIN)/cyclonedx-gomod" \
	CONTAINER_ENGINE="$(CONTAINER_ENGINE)" CA_BUNDLE="$(CA_BUNDLE)" IMAGE_LICENSE="$(IMAGE_LICENSE)" $(CKEREF_ENV)

release-tools:
	cd tools && $(GO) build -trimpath -o "$(TOOLS_BIN)/" \
		github.com/goreleaser/nfpm/v2/cmd/nfpm github.com/CycloneDX/cyclonedx-gomod/cmd/cyclonedx-gomod

release: release-tools
	@case "$(origin VERSION)" in "command line"|environment) ;; \
		*) echo "release: name the release: make release VERSION=v0.1.0" >&2; exit 2;; esac
	@echo "$(VERSION)" | grep -Eqx 'v0\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)' || \
		{ echo "release: VERSION=$(VERSION) is not v0.MINOR.PATCH (RELEASE.md, Versions)" >&2; exit 2; }
	@test -z "$$(git status --porcelain)" || \
		{ echo "release: the tree has changes that are not committed (git status): commit them, a release is made of a commit" >&2; exit 1; }
	@test -n "$(CONTAINER_ENGINE)" || { echo "release: neither podman nor docker is installed (apt-get install podman)" >&2; exit 1; }
	rm -rf "$(DIST)" && mkdir -p "$(DIST)"
	@set -e; for arch in $(RELEASE_ARCHES); do \
		echo "release: linux/$$arch"; \
		$(RELEASE_ENV) DIST="$(DIST)" deploy/release.sh binaries $$arch "$(DIST)/.bin/$$arch"; \
		$(RELEASE_ENV) DIST="$(DIST)" deploy/release.sh package $$arch "$(DIST)/.bin/$$arch"; \
		$(RELEASE_ENV) DIST="$(DIST)" deploy/release.sh image $$arch "$(DIST)/.bin/$$arch"; \
	done
	rm -rf "$(DIST)/.bin"
	$(RELEASE_ENV) DIST="$(DIST)" deploy/release.sh sums
	cd "$(DIST)" && sha256sum -c --quiet SHA256SUMS && ls -l
	@echo "release: $(VERSION) (commit $(REVISION), cke on CKE $(CKE_VERSION)) in $(DIST)"

# What make test checks of a release, for this machine's architecture
# alone (make release builds the others): the three binaries built twice,
# ckegen and ckegenctl the second time with an empty Go build cache, and
# the same bytes both times; then the archive, the .deb (lintian, dpkg-deb,
# systemd-analyze) and the SBOMs of the first, checked by deploy/'s
# release tests (go test -tags releasecheck). No image: TestImage builds
# it. Nothing is installed.
release-check: release-tools
	@$(RELEASE_ENV) deploy/release.sh check $$($(GO) env GOARCH)
