module github.com/vkzip/vkzip

go 1.26.8

require (
	github.com/stretchr/testify v1.12.1
	github.com/vulkan-go/vulkan v0.0.0-20210402152248-956e3850d8f9
	golang.org/x/exp v0.0.0-20261113113407-e3970619a1a4
	golang.org/x/sys v0.50.0
)

require (
	github.com/klauspost/cpuid/v2 v2.2.10 // indirect
	github.com/zeebo/xxh3 v1.1.0 // indirect
	go.yaml.in/yaml/v3 v3.0.5 // indirect
)
