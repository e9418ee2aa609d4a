//go:build nonvml

package nvml

// nonvmlTag is true in a build with -tags nonvml.
const nonvmlTag = true
