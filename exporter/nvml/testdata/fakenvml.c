/*
 * fakenvml.c: a stand-in for libnvidia-ml.so.1 used by the tests of package
 * exporter/nvml. Written for gpufrag from the NVML API documentation; it
 * implements only the entry points package nvml calls (dl.go), and a few
 * older names of them, with the struct layouts those calls use.
 *
 * Build: cc -shared -fPIC -o libnvidia-ml.so.1 fakenvml.c
 *   -DFAKENVML_OLD_DRIVER  leaves out nvmlDeviceGetMemoryInfo_v2 and the
 *                          versioned process queries, like an old driver.
 *
 * Runtime knobs (environment):
 *   FAKENVML_LOST_GPU=<i>  GPU i answers memory queries with
 *                          NVML_ERROR_GPU_IS_LOST.
 *
 * The figures below are repeated in fake_test.go; change both together.
 */
#include <stdlib.h>
#include <string.h>

typedef int ret_t; /* nvmlReturn_t */

enum {
	OK = 0,
	E_UNINITIALIZED = 1,
	E_INVALID_ARGUMENT = 2,
	E_INSUFFICIENT_SIZE = 7,
	E_GPU_IS_LOST = 15,
	E_ARGUMENT_VERSION_MISMATCH = 25,
};

/* nvmlMemory_t */
struct mem_v1 {
	unsigned long long total, free, used;
};

/* nvmlMemory_v2_t: version first, then reserved between total and free. */
struct mem_v2 {
	unsigned int version;
	unsigned long long total, reserved, free, used;
};

/* nvmlProcessInfo_v1_t */
struct proc_v1 {
	unsigned int pid;
	unsigned long long used;
};

/* nvmlProcessInfo_t (v2 and v3 share this layout) */
struct proc_v3 {
	unsigned int pid;
	unsigned long long used;
	unsigned int gpu_instance, compute_instance;
};

#define GIB (1024ULL * 1024 * 1024)
#define MIB (1024ULL * 1024)
#define NOT_AVAILABLE (~0ULL) /* NVML_VALUE_NOT_AVAILABLE */
#define MAX_PROCS 4

struct proc {
	unsigned int pid;
	unsigned long long used;
};

/* nvmlDevice_t points at one of these. */
struct gpu {
	const char *uuid, *name;
	unsigned long long total, reserved, used; /* used excludes reserved */
	int ncompute, ngraphics;
	struct proc compute[MAX_PROCS], graphics[MAX_PROCS];
};

static struct gpu gpus[] = {
	{
		"GPU-11111111-2222-3333-4444-555555555555", "Fake H100 80GB",
		80 * GIB, 512 * MIB, 40 * GIB,
		2, 2,
		{{4242, 30 * GIB}, {5151, 10 * GIB}},
		{{5151, 10 * GIB}, {6060, NOT_AVAILABLE}},
	},
	{
		"GPU-aaaaaaaa-bbbb-cccc-dddd-eeeeeeeeeeee", "Fake A100 40GB",
		40 * GIB, 256 * MIB, 0,
		0, 0, {{0, 0}}, {{0, 0}},
	},
};

#define NGPUS ((unsigned int)(sizeof gpus / sizeof gpus[0]))

static int inits;

static int lost(const struct gpu *g)
{
	const char *s = getenv("FAKENVML_LOST_GPU");
	return s != NULL && *s != '\0' && atoi(s) == (int)(g - gpus);
}

static ret_t check(const struct gpu *g)
{
	if (inits == 0)
		return E_UNINITIALIZED;
	if (g < gpus || g >= gpus + NGPUS)
		return E_INVALID_ARGUMENT;
	return OK;
}

ret_t nvmlInit(void) { inits++; return OK; }
ret_t nvmlInit_v2(void) { inits++; return OK; }
ret_t nvmlInitWithFlags(unsigned int flags) { (void)flags; inits++; return OK; }

ret_t nvmlShutdown(void)
{
	if (inits == 0)
		return E_UNINITIALIZED;
	inits--;
	return OK;
}

const char *nvmlErrorString(ret_t r)
{
	switch (r) {
	case OK: return "fake: success";
	case E_UNINITIALIZED: return "fake: not initialized";
	case E_INVALID_ARGUMENT: return "fake: invalid argument";
	case E_INSUFFICIENT_SIZE: return "fake: buffer too small";
	case E_GPU_IS_LOST: return "fake: GPU is lost";
	case E_ARGUMENT_VERSION_MISMATCH: return "fake: struct version mismatch";
	}
	return "fake: unknown error";
}

static ret_t count(unsigned int *n)
{
	if (inits == 0)
		return E_UNINITIALIZED;
	if (n == NULL)
		return E_INVALID_ARGUMENT;
	*n = NGPUS;
	return OK;
}

ret_t nvmlDeviceGetCount(unsigned int *n) { return count(n); }
ret_t nvmlDeviceGetCount_v2(unsigned int *n) { return count(n); }

static ret_t handle(unsigned int i, struct gpu **dev)
{
	if (inits == 0)
		return E_UNINITIALIZED;
	if (i >= NGPUS || dev == NULL)
		return E_INVALID_ARGUMENT;
	*dev = &gpus[i];
	return OK;
}

ret_t nvmlDeviceGetHandleByIndex(unsigned int i, struct gpu **dev) { return handle(i, dev); }
ret_t nvmlDeviceGetHandleByIndex_v2(unsigned int i, struct gpu **dev) { return handle(i, dev); }

static ret_t copystr(const char *s, char *buf, unsigned int len)
{
	if (buf == NULL || strlen(s) + 1 > len)
		return E_INSUFFICIENT_SIZE;
	strcpy(buf, s);
	return OK;
}

ret_t nvmlDeviceGetUUID(struct gpu *g, char *buf, unsigned int len)
{
	ret_t r = check(g);
	return r != OK ? r : copystr(g->uuid, buf, len);
}

ret_t nvmlDeviceGetName(struct gpu *g, char *buf, unsigned int len)
{
	ret_t r = check(g);
	return r != OK ? r : copystr(g->name, buf, len);
}

/* v1 semantics: used includes the reserved memory. */
ret_t nvmlDeviceGetMemoryInfo(struct gpu *g, struct mem_v1 *m)
{
	ret_t r = check(g);
	if (r != OK)
		return r;
	if (m == NULL)
		return E_INVALID_ARGUMENT;
	if (lost(g))
		return E_GPU_IS_LOST;
	m->total = g->total;
	m->used = g->reserved + g->used;
	m->free = g->total - m->used;
	return OK;
}

#ifndef FAKENVML_OLD_DRIVER
/* NVML_STRUCT_VERSION(Memory, 2): the size in the low bits, 2 in the top byte. */
#define MEM_V2_VERSION ((unsigned int)(sizeof(struct mem_v2) | (2u << 24)))

ret_t nvmlDeviceGetMemoryInfo_v2(struct gpu *g, struct mem_v2 *m)
{
	ret_t r = check(g);
	if (r != OK)
		return r;
	if (m == NULL)
		return E_INVALID_ARGUMENT;
	if (m->version != MEM_V2_VERSION)
		return E_ARGUMENT_VERSION_MISMATCH;
	if (lost(g))
		return E_GPU_IS_LOST;
	m->total = g->total;
	m->reserved = g->reserved;
	m->used = g->used;
	m->free = g->total - g->reserved - g->used;
	return OK;
}
#endif

/*
 * The process queries share one protocol: *count is the capacity of infos on
 * entry and the number of processes on return; too small a capacity gives
 * NVML_ERROR_INSUFFICIENT_SIZE with *count set to the number needed.
 */
static ret_t procs_v1(struct gpu *g, int n, const struct proc *ps, unsigned int *cnt, struct proc_v1 *out)
{
	ret_t r = check(g);
	if (r != OK)
		return r;
	if (cnt == NULL)
		return E_INVALID_ARGUMENT;
	if (*cnt < (unsigned int)n) {
		*cnt = (unsigned int)n;
		return E_INSUFFICIENT_SIZE;
	}
	for (int i = 0; i < n; i++) {
		out[i].pid = ps[i].pid;
		out[i].used = ps[i].used;
	}
	*cnt = (unsigned int)n;
	return OK;
}

ret_t nvmlDeviceGetComputeRunningProcesses(struct gpu *g, unsigned int *cnt, struct proc_v1 *out)
{
	return procs_v1(g, g->ncompute, g->compute, cnt, out);
}

ret_t nvmlDeviceGetGraphicsRunningProcesses(struct gpu *g, unsigned int *cnt, struct proc_v1 *out)
{
	return procs_v1(g, g->ngraphics, g->graphics, cnt, out);
}

#ifndef FAKENVML_OLD_DRIVER
static ret_t procs_v3(struct gpu *g, int n, const struct proc *ps, unsigned int *cnt, struct proc_v3 *out)
{
	ret_t r = check(g);
	if (r != OK)
		return r;
	if (cnt == NULL)
		return E_INVALID_ARGUMENT;
	if (*cnt < (unsigned int)n) {
		*cnt = (unsigned int)n;
		return E_INSUFFICIENT_SIZE;
	}
	for (int i = 0; i < n; i++) {
		out[i].pid = ps[i].pid;
		out[i].used = ps[i].used;
		out[i].gpu_instance = ~0u;
		out[i].compute_instance = ~0u;
	}
	*cnt = (unsigned int)n;
	return OK;
}

ret_t nvmlDeviceGetComputeRunningProcesses_v3(struct gpu *g, unsigned int *cnt, struct proc_v3 *out)
{
	return procs_v3(g, g->ncompute, g->compute, cnt, out);
}

ret_t nvmlDeviceGetGraphicsRunningProcesses_v3(struct gpu *g, unsigned int *cnt, struct proc_v3 *out)
{
	return procs_v3(g, g->ngraphics, g->graphics, cnt, out);
}
#endif
