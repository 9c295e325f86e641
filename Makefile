# Two commands set everything up on a fresh Debian/Ubuntu machine:
#   make run    installs what is missing, builds vkzip and runs `vkzip demo` on the built-in KV sample
#   make test   installs what is missing and runs the whole test suite (what CI runs)
#   make python builds libvkzip.so and installs the vkzip Python package for a python3 with numpy (says which)
SHELL := /bin/bash
export PATH := /usr/local/go/bin:$(HOME)/go/bin:$(PATH)
GO ?= go
BIN := bin/vkzip

.PHONY: run test deps build generate clean python

deps:
	@scripts/deps.sh

build: deps
	$(GO) build -o $(BIN) ./cmd/vkzip

run: build
	$(BIN) demo

test: deps
	@scripts/test.sh

python: deps
	@scripts/install-python.sh

generate:
	$(GO) generate ./shaders

clean:
	rm -rf bin
