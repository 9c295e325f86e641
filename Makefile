# Two commands set everything up on a fresh Debian/Ubuntu machine:
#   make run    installs what is missing, builds vkzip and runs `vkzip demo` on the built-in KV sample
#   make test   installs what is missing and runs the whole test suite (what CI runs)
SHELL := /bin/bash
export PATH := /usr/local/go/bin:$(HOME)/go/bin:$(PATH)
GO ?= go
BIN := bin/vkzip

.PHONY: run test deps build generate clean

deps:
	@scripts/deps.sh

build: deps
	$(GO) build -o $(BIN) ./cmd/vkzip

run: build
	$(BIN) demo

test: deps
	@scripts/test.sh

generate:
	$(GO) generate ./shaders

clean:
	rm -rf bin
