//go:build cgo

// Command capi is libvkzip.so, vkzip's C ABI: build it with
//
//	go build -buildmode=c-shared -o libvkzip.so ./capi
//
// and include capi/include/vkzip.h, the hand-written header that is the contract (cgo's generated libvkzip.h
// declares the internal vkzipgo_* exports and is not for callers). shim.c holds the public entry points: each
// checks for use after fork in C, then calls the Go export of the same name with a vkzipgo_ prefix.
//
// Every export recovers panics into VKZIP_E_INTERNAL, maps errors to one status per codec error class, keeps the
// message in a thread-local slot in C, and keeps no pointer the caller passed (cgo's rules: Go code reads and
// writes the caller's memory only during the call; what C gets back is C memory).
package main

func main() {}
