package registry

// The environment variable PyTorch reads its allocator settings from.
// PyTorch 2.8 made PYTORCH_ALLOC_CONF the primary name, shared by every
// accelerator (c10/core/AllocatorConfig.cpp, AcceleratorAllocatorConfig,
// pytorch/pytorch#149601); PYTORCH_CUDA_ALLOC_CONF, the name before, is
// still read: releases 2.8 to 2.11 warn that it is deprecated, and later
// documentation calls it an alias (pytorch/pytorch#167659). Releases
// before 2.8 read only the old name.
const (
	EnvVar       = "PYTORCH_ALLOC_CONF"
	LegacyEnvVar = "PYTORCH_CUDA_ALLOC_CONF"
	// EnvVarNote says so in a line of advice.
	EnvVarNote = EnvVar + " is the name PyTorch 2.8 and later read; " + LegacyEnvVar +
		", the older name, still works (and is the one to set before 2.8)"
)
