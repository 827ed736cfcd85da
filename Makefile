# The README's two commands are `make serve` and `make test`.
# `make test` installs what the tests need (the Debian packages listed in
# .ci/packages when run as root, else it stops naming the command to run; the
# pinned npm peers under interop/; staticcheck from the Go module proxy) and
# runs every check, cross-compilation for every release target included.

GO          ?= go
STATICCHECK ?= honnef.co/go/tools/cmd/staticcheck@v0.8.2
ADDR        ?= 127.0.0.1:8080

.PHONY: test serve packages interop lint cross dist bench fuzz

# The release targets, GOOS/GOARCH; internal/release builds the same list.
TARGETS     := linux/amd64 linux/arm64 darwin/amd64 darwin/arm64 windows/amd64 windows/arm64

serve:
	$(GO) run ./cmd/skillport serve --http $(ADDR) examples/skills

# go test runs every fuzz target on its seeds and testdata/fuzz corpus; then
# every target mutates briefly (CI_FUZZTIME each, 65 targets), so a parser
# change that crashes on a near-seed input fails here; make fuzz digs
# longer. A count, not a duration: Go 1.26's fuzz coordinator can report a
# bare "context deadline exceeded" when a -fuzztime duration ends while a
# worker is mid-input (go.dev/issue/75804, fixed in Go 1.27), which failed
# a CI run with nothing found; a count has no deadline to race.
CI_FUZZTIME ?= 2000x
test: packages interop lint cross
	$(GO) test -count=1 -timeout 45m ./...
	GO=$(GO) FUZZTIME=$(CI_FUZZTIME) ./.ci/fuzz

packages:
	./.ci/install-packages

interop: packages
	./interop/install.sh

lint:
	@unformatted="$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go' -not -path './interop/*'))"; \
	if [ -n "$$unformatted" ]; then echo "gofmt would change: $$unformatted" >&2; exit 1; fi
	$(GO) vet ./...
	$(GO) run $(STATICCHECK) ./...

# Every target builds, and on each OS every package and its tests
# type-check (go vet compiles them), so a Unix-only call cannot slip into a
# package Windows or macOS users build. go vet runs once per OS, on amd64
# (linux/amd64's is make lint's); the arm64 targets build every package,
# which reaches the only architecture-specific files (sandbox/seccomp_*.go).
# The targets but linux/amd64 use internal/release's flags (-trimpath,
# CGO_ENABLED=0), so its test's cross-builds (linux/arm64, windows/amd64)
# reuse these compiles. One command a line: set -e ignores a failure left of &&.
cross:
	@set -e; for t in $(TARGETS); do \
		echo "cross: $$t" >&2; \
		export GOOS=$${t%/*} GOARCH=$${t#*/} CGO_ENABLED=0; \
		case $$t in \
		linux/amd64) $(GO) build -o /dev/null ./cmd/skillport ;; \
		*/amd64) $(GO) vet -trimpath ./...; $(GO) build -trimpath -o /dev/null ./cmd/skillport ;; \
		*) $(GO) build -trimpath ./...; $(GO) build -trimpath -o /dev/null ./cmd/skillport ;; \
		esac; \
	done

# Archives for every target (tar.gz; zip for Windows) and SHA256SUMS under
# dist/, the version stamped by the go command from git (see internal/release).
dist:
	$(GO) run ./internal/release -out dist $(TARGETS)

# Benchmarks print ratios against baselines measured in the same run.
bench:
	$(GO) test -run '^$$' -bench . -benchtime 3x ./...

# Every Fuzz* target in the tree, one after the other, FUZZTIME each
# (listed by the go command, anchored; see .ci/fuzz). `make fuzz
# FUZZTIME=10m PKGS=./gitsource/` digs into one package.
FUZZTIME    ?= 60s
PKGS        ?= ./...
fuzz:
	GO=$(GO) FUZZTIME=$(FUZZTIME) ./.ci/fuzz $(PKGS)
