package nccl

import (
	"fmt"
	"os"
)

// SafetyEnv are set, overriding any other value, before NCCL is loaded: they
// keep NCCL (and PyTorch's symmetric memory and NVSHMEM, should a child
// process use them) away from NVLink multicast (NVLS), whose objects can put
// the shared GPUs of a host out of service.
var SafetyEnv = [][2]string{
	{"NCCL_NVLS_ENABLE", "0"},
	{"TORCH_SYMM_MEM_DISABLE_MULTICAST", "1"},
	{"NVSHMEM_DISABLE_NVLS", "1"},
}

// DefaultEnv are set before NCCL is loaded unless the environment has them
// already. NCCL_P2P_DIRECT_DISABLE=1 makes NCCL copy through its own buffers
// instead of reading and writing user buffers of the peer GPU directly:
// memory that Vulkan allocated and CUDA imported is not mapped for peer
// access the way cudaMalloc memory is.
var DefaultEnv = [][2]string{
	{"NCCL_P2P_DIRECT_DISABLE", "1"},
}

// ApplyEnv sets SafetyEnv (always) and DefaultEnv (where unset) in the
// process environment, which NCCL reads when it initialises and children
// inherit. Load calls it first; call it earlier where other code might
// initialise NCCL.
func ApplyEnv() error {
	for _, kv := range SafetyEnv {
		if err := os.Setenv(kv[0], kv[1]); err != nil {
			return fmt.Errorf("nccl: setting %s: %w", kv[0], err)
		}
	}
	for _, kv := range DefaultEnv {
		if _, ok := os.LookupEnv(kv[0]); ok {
			continue
		}
		if err := os.Setenv(kv[0], kv[1]); err != nil {
			return fmt.Errorf("nccl: setting %s: %w", kv[0], err)
		}
	}
	return nil
}

// ReportedEnv are the NCCL variables worth printing with a measurement.
var ReportedEnv = []string{"NCCL_NVLS_ENABLE", "NCCL_P2P_DIRECT_DISABLE", "NCCL_P2P_USE_CUDA_MEMCPY", "NCCL_P2P_DISABLE",
	"NCCL_PROTO", "NCCL_ALGO", "NCCL_MAX_NCHANNELS", "NCCL_MIN_NCHANNELS", "NCCL_BUFFSIZE", "NCCL_CUMEM_ENABLE",
	"TORCH_SYMM_MEM_DISABLE_MULTICAST", "NVSHMEM_DISABLE_NVLS"}

// Env returns the ReportedEnv variables that are set.
func Env() map[string]string {
	m := map[string]string{}
	for _, k := range ReportedEnv {
		if v, ok := os.LookupEnv(k); ok {
			m[k] = v
		}
	}
	return m
}
