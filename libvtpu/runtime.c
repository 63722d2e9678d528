// SPDX-License-Identifier: MIT
/*
 * The runtime: compiled programs on a device or on the cpu backend, behind
 * one small interface, so the model code does not care which.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <libsync.h>

#include "graph_priv.h"
#include "vtpu_engine.h"

int vg_runtime_open(struct vg_runtime *rt, const char *device, int cpu_gemm,
		    int threads)
{
	VTPU_QUEUE_OPTS(opts, .priority = VTPU_QUEUE_PRIORITY_NORMAL,
			.timeout_ms = VG_QUEUE_TIMEOUT_MS);
	uint64_t simd = 0, cores = 0;
	int ret;

	memset(rt, 0, sizeof(*rt));
	if (!device)
		device = "/dev/vtpu0";
	if (!strcmp(device, "cpu")) {
		rt->cpu = vtpu_cpu_create(threads, -1, cpu_gemm);
		if (!rt->cpu)
			return -errno;
		/* OpenBLAS's GEMM, the baseline, takes row-major matrices */
		rt->panels = cpu_gemm != VTPU_CPU_GEMM_OPENBLAS;
		snprintf(rt->name, sizeof(rt->name), "cpu (%s, %s)",
			 cpu_gemm == VTPU_CPU_GEMM_OPENBLAS ? "openblas" :
							      "engine",
			 vtpu_engine_simd_name(vtpu_cpu_simd(rt->cpu)));
		return 0;
	}
	rt->dev = vtpu_open(device);
	if (!rt->dev)
		return -errno;
	/* a submission can be many training steps: give it minutes */
	ret = vtpu_queue_create_opts(rt->dev, &opts, &rt->queue);
	if (ret) {
		vtpu_close(rt->dev);
		rt->dev = NULL;
		return ret;
	}
	rt->panels = true;
	vtpu_get_param(rt->dev, VTPU_PARAM_SIMD_LEVEL, &simd);
	vtpu_get_param(rt->dev, VTPU_PARAM_NUM_CORES, &cores);
	snprintf(rt->name, sizeof(rt->name), "%s (%s, %llu cores)", device,
		 vtpu_engine_simd_name((uint32_t)simd),
		 (unsigned long long)cores);
	return 0;
}

void vg_runtime_close(struct vg_runtime *rt)
{
	if (rt->dev) {
		vtpu_queue_destroy(rt->dev, rt->queue);
		vtpu_close(rt->dev);
	}
	vtpu_cpu_destroy(rt->cpu);
	memset(rt, 0, sizeof(*rt));
}

int vg_bo_create(struct vg_runtime *rt, uint64_t size, struct vtpu_bo *bo)
{
	int ret;

	if (!size)
		size = 1;
	if (rt->dev)
		return vtpu_bo_create(rt->dev, size, bo);
	/* the cpu backend's cap is counted as the module counts mem_cap */
	if (rt->mem_cap && size > rt->mem_cap - rt->mem_used)
		return -ENOSPC;
	ret = vtpu_cpu_bo_create(size, bo);
	if (!ret)
		rt->mem_used += bo->size;
	return ret;
}

uint64_t vg_mem_free(struct vg_runtime *rt)
{
	uint64_t cap = 0, used = 0;

	if (rt->dev) {
		if (vtpu_get_param(rt->dev, VTPU_PARAM_MEM_CAP, &cap) ||
		    vtpu_get_param(rt->dev, VTPU_PARAM_MEM_USED, &used))
			return UINT64_MAX;
		return cap > used ? cap - used : 0;
	}
	if (!rt->mem_cap)
		return UINT64_MAX;
	return rt->mem_cap - rt->mem_used;
}

void vg_bo_destroy(struct vg_runtime *rt, struct vtpu_bo *bo)
{
	if (!bo->map)
		return;
	if (rt->dev) {
		vtpu_bo_destroy(rt->dev, bo);
	} else {
		rt->mem_used -= bo->size < rt->mem_used ? bo->size :
							  rt->mem_used;
		vtpu_cpu_bo_destroy(bo);
	}
	memset(bo, 0, sizeof(*bo));
}

int vg_submit(struct vg_runtime *rt, struct vtpu_cmdbuf *cb,
	      const uint64_t *strides, uint32_t first, uint32_t repeat,
	      int in_fence, int *fence, char *err, size_t errlen)
{
	struct vtpu_job job = {
		.queue = rt->queue, .in_fence = in_fence, .out_fence = -1,
		.want_out_fence = rt->dev != NULL, .repeat = repeat,
		.first_iter = first, .strides = strides,
	};
	int ret;

	/* the cpu backend runs now: its caller waited for what it needs */
	ret = rt->dev ? vtpu_submit(rt->dev, cb, &job) :
			vtpu_cpu_run(rt->cpu, cb, &job);
	if (ret && job.error.reason != VTPU_ERR_NONE && err)
		vtpu_job_strerror(cb, &job, err, errlen);
	*fence = job.out_fence;
	return ret;
}

int vg_run(struct vg_runtime *rt, struct vg_program *prog,
	   struct vtpu_bo *const bufs[VG_NBUFS], const uint64_t *strides,
	   uint32_t first, uint32_t repeat, int *fence, char *err,
	   size_t errlen)
{
	return vg_run_after(rt, prog, bufs, strides, first, repeat, -1, fence,
			    err, errlen);
}

int vg_run_after(struct vg_runtime *rt, struct vg_program *prog,
		 struct vtpu_bo *const bufs[VG_NBUFS], const uint64_t *strides,
		 uint32_t first, uint32_t repeat, int in_fence, int *fence,
		 char *err, size_t errlen)
{
	int i;

	for (i = 0; i < VG_NBUFS; i++) {
		prog->cb.handles[i] = bufs[i]->handle;
		prog->cb.bos[i] = bufs[i];
	}
	return vg_submit(rt, &prog->cb, strides, first, repeat, in_fence,
			 fence, err, errlen);
}

int vg_fence_merge(const int *fences, uint32_t n, int *merged)
{
	int out = -1, fd;
	uint32_t i;

	*merged = -1;
	for (i = 0; i < n; i++) {
		if (fences[i] < 0)
			continue;
		fd = out < 0 ? dup(fences[i]) :
			       sync_merge("vtpu-replicas", out, fences[i]);
		if (fd < 0) {
			fd = -errno;
			if (out >= 0)
				close(out);
			return fd;
		}
		if (out >= 0)
			close(out);
		out = fd;
	}
	*merged = out;
	return 0;
}

int vg_wait(struct vg_runtime *rt, int fence)
{
	int ret;

	if (fence < 0)
		return 0;
	ret = vtpu_fence_wait(fence, -1);
	close(fence);
	return ret;
}
