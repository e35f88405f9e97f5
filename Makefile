# Building pollwarden. `make install` puts the binary in $(go env GOPATH)/bin;
# `make dist` builds release archives under dist/, each binary stamped with
# VERSION (what `pollwarden --version` prints). Neither downloads anything:
# modules come from the module cache (run `go mod download` once, online),
# and a missing module is an error, not a fetch.

VERSION   ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo devel)
PLATFORMS ?= linux/amd64 linux/arm64 darwin/amd64 darwin/arm64 windows/amd64
LDFLAGS   := -s -w -X main.version=$(VERSION)

export GOFLAGS     := -mod=readonly
export GOPROXY     := off
export GOTOOLCHAIN := local
export CGO_ENABLED := 0

.PHONY: build install dist clean

build:
	go build -trimpath -ldflags '$(LDFLAGS)' -o pollwarden ./cmd/pollwarden

install:
	go install -trimpath -ldflags '$(LDFLAGS)' ./cmd/pollwarden

dist:
	rm -rf dist && mkdir -p dist
	set -e; for p in $(PLATFORMS); do \
		os=$${p%/*}; arch=$${p#*/}; ext=; [ "$$os" = windows ] && ext=.exe; \
		d=dist/pollwarden_$(VERSION)_$${os}_$${arch}; mkdir -p $$d; \
		GOOS=$$os GOARCH=$$arch go build -trimpath -ldflags '$(LDFLAGS)' -o $$d/pollwarden$$ext ./cmd/pollwarden; \
		cp README.md $$d/; \
		tar -C dist -czf $$d.tar.gz $${d#dist/}; rm -rf $$d; \
	done
	cd dist && sha256sum *.tar.gz > SHA256SUMS

clean:
	rm -rf dist pollwarden
