# The README's two commands are `make serve` and `make test`.
# `make test` installs what the tests need (the pinned npm peers under
# interop/, staticcheck from the Go module proxy) and runs every check.

GO          ?= go
STATICCHECK ?= honnef.co/go/tools/cmd/staticcheck@v0.8.2
ADDR        ?= 127.0.0.1:8080

.PHONY: test serve interop lint bench fuzz

serve:
	$(GO) run ./cmd/skillport serve --http $(ADDR) examples/skills

test: interop lint
	$(GO) test -count=1 -timeout 45m ./...

interop:
	./interop/install.sh

lint:
	@unformatted="$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go' -not -path './interop/*'))"; \
	if [ -n "$$unformatted" ]; then echo "gofmt would change: $$unformatted" >&2; exit 1; fi
	$(GO) vet ./...
	$(GO) run $(STATICCHECK) ./...

# Benchmarks print ratios against baselines measured in the same run.
bench:
	$(GO) test -run '^$$' -bench . -benchtime 3x ./...

# A short fuzzing pass over every parser of untrusted input.
fuzz:
	$(GO) test -run '^$$' -fuzz FuzzParse -fuzztime 60s ./skill/
	$(GO) test -run '^$$' -fuzz FuzzPathMapping -fuzztime 60s ./catalog/
	$(GO) test -run '^$$' -fuzz FuzzOrigin -fuzztime 60s ./endpoint/
	$(GO) test -run '^$$' -fuzz FuzzServeMCP -fuzztime 60s ./endpoint/
	$(GO) test -run '^$$' -fuzz FuzzIndexSkill -fuzztime 60s ./registry/
