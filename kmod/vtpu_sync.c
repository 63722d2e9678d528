// SPDX-License-Identifier: GPL-2.0-only
/*
 * Implicit synchronisation through dma-buf reservation objects.
 *
 * A job that uses a shared buffer (exported as a dma-buf, or another
 * driver's that was imported) takes part in the buffer's implicit sync,
 * as a GPU job does: it waits for the fences already in the buffer's
 * dma_resv (all of them if it writes the buffer, the writers' if it only
 * reads) and puts its own fence there, as a writer or a reader, so that
 * poll() on the dma-buf, DMA_BUF_IOCTL_SYNC and other drivers wait for it.
 * VTPU_SUBMIT_NO_IMPLICIT_SYNC leaves both out.
 *
 * The reservation objects are locked (ww_mutex, all or none) from before
 * the fences are gathered until the job's fence is in them, so two jobs
 * submitted at once on one buffer are ordered one after the other. The
 * fences to wait for become the job's in-fence, merged with the one user
 * space gave (dma_fence_unwrap_merge()), under the same in-fence watchdog.
 */
#include <linux/dma-fence-unwrap.h>
#include <linux/slab.h>

#include "vtpu_drv.h"

/* Lock every object of @imp; Return: 0, or -EINTR/-ERESTARTSYS. */
static int vtpu_implicit_lock(struct vtpu_implicit *imp)
{
	int contended = -1, i, j, ret;

	ww_acquire_init(&imp->ctx, &reservation_ww_class);
retry:
	if (contended >= 0) {
		ret = dma_resv_lock_slow_interruptible(imp->resv[contended],
						       &imp->ctx);
		if (ret)
			goto err_fini;
	}
	for (i = 0; i < imp->n; i++) {
		if (i == contended)
			continue;
		ret = dma_resv_lock_interruptible(imp->resv[i], &imp->ctx);
		if (!ret)
			continue;
		for (j = 0; j < i; j++)
			if (j != contended)
				dma_resv_unlock(imp->resv[j]);
		if (contended >= i)
			dma_resv_unlock(imp->resv[contended]);
		if (ret == -EDEADLK) {
			contended = i;
			goto retry;
		}
		goto err_fini;
	}
	ww_acquire_done(&imp->ctx);
	return 0;

err_fini:
	ww_acquire_fini(&imp->ctx);
	return ret;
}

/*
 * The fences @job must wait for, merged with its own in-fence into one;
 * the objects are locked. Return: 0 or -ENOMEM.
 */
static int vtpu_implicit_gather(struct vtpu_kjob *job,
				struct vtpu_implicit *imp)
{
	struct dma_fence **all = NULL, **got, **grown, *merged;
	struct dma_fence_unwrap *cursors;
	unsigned int n = 0, count, i, k;
	int ret = 0;

	for (k = 0; k < imp->n; k++) {
		ret = dma_resv_get_fences(imp->resv[k],
					  dma_resv_usage_rw(imp->write[k]),
					  &count, &got);
		if (ret)
			goto out;
		if (!count)
			continue;
		grown = krealloc_array(all, n + count + 1, sizeof(*all),
				       GFP_KERNEL);
		if (!grown) {
			for (i = 0; i < count; i++)
				dma_fence_put(got[i]);
			kfree(got);
			ret = -ENOMEM;
			goto out;
		}
		all = grown;
		memcpy(all + n, got, count * sizeof(*got));
		n += count;
		kfree(got);
	}
	if (!n)
		return 0;
	if (job->in_fence)
		all[n++] = job->in_fence;	/* the merge takes its own ref */
	cursors = kcalloc(n, sizeof(*cursors), GFP_KERNEL);
	merged = cursors ? __dma_fence_unwrap_merge(n, all, cursors) : NULL;
	kfree(cursors);
	if (!merged) {
		if (job->in_fence)
			n--;	/* not ours to put */
		ret = -ENOMEM;
		goto out;
	}
	if (job->in_fence) {
		n--;
		dma_fence_put(job->in_fence);
	}
	job->in_fence = merged;
out:
	for (i = 0; i < n; i++)
		dma_fence_put(all[i]);
	kfree(all);
	return ret;
}

/* Unlock what vtpu_implicit_begin() locked and free it. */
void vtpu_implicit_end(struct vtpu_implicit *imp)
{
	u32 k;

	if (!imp->n)
		return;
	for (k = 0; k < imp->n; k++)
		dma_resv_unlock(imp->resv[k]);
	ww_acquire_fini(&imp->ctx);
	kvfree(imp->resv);
	kvfree(imp->write);
	imp->n = 0;
}

/**
 * vtpu_implicit_begin() - lock the reservation objects of @job's shared
 *	buffers and make their fences part of its in-fence
 * @job: validated, not armed yet
 * @imp: filled in; imp->n is 0 when no buffer is shared
 * @written: per buffer of @job, whether the job writes it (NULL: all)
 *
 * Return: 0 with the objects locked and a fence slot reserved in each (end
 * with vtpu_implicit_publish() or vtpu_implicit_end()), or -errno.
 */
int vtpu_implicit_begin(struct vtpu_kjob *job, struct vtpu_implicit *imp,
			const bool *written)
{
	u32 i, k;
	int ret;

	imp->n = 0;
	for (i = 0; i < job->nbufs; i++)
		imp->n += !!vtpu_bo_resv(job->bos[i]);
	if (!imp->n)
		return 0;
	imp->resv = kvmalloc_array(imp->n, sizeof(*imp->resv), GFP_KERNEL);
	imp->write = kvmalloc_array(imp->n, sizeof(*imp->write), GFP_KERNEL);
	if (!imp->resv || !imp->write) {
		ret = -ENOMEM;
		goto err_free;
	}
	for (i = 0, k = 0; i < job->nbufs && k < imp->n; i++) {
		struct dma_resv *resv = vtpu_bo_resv(job->bos[i]);

		if (!resv)
			continue;
		imp->resv[k] = resv;
		imp->write[k++] = !written || written[i];
	}
	imp->n = k;	/* a buffer exported meanwhile joins the next job */

	ret = vtpu_implicit_lock(imp);
	if (ret)
		goto err_free;
	for (k = 0; k < imp->n; k++) {
		ret = dma_resv_reserve_fences(imp->resv[k], 1);
		if (ret)
			goto err_end;
	}
	ret = vtpu_implicit_gather(job, imp);
	if (ret)
		goto err_end;
	return 0;

err_end:
	vtpu_implicit_end(imp);
	return ret;
err_free:
	kvfree(imp->resv);
	kvfree(imp->write);
	imp->n = 0;
	return ret;
}

/**
 * vtpu_implicit_publish() - put @job's fence in the objects @imp locked,
 *	as a writer or a reader, and unlock them
 * @job: armed: its fence exists
 * @imp: from vtpu_implicit_begin()
 */
void vtpu_implicit_publish(struct vtpu_kjob *job, struct vtpu_implicit *imp)
{
	u32 k;

	for (k = 0; k < imp->n; k++)
		dma_resv_add_fence(imp->resv[k], &job->fence->base,
				   imp->write[k] ? DMA_RESV_USAGE_WRITE :
						   DMA_RESV_USAGE_READ);
	vtpu_implicit_end(imp);
}
