// SPDX-License-Identifier: GPL-2.0-only
/*
 * Queues, submission, fences and waiting.
 *
 * A submit copies the command stream and the handle list in, takes a
 * reference on every buffer, and validates the whole stream with the
 * engine before anything is queued. Each job gets a dma_fence on its
 * queue's timeline (exported as a sync_file on request); the queue keeps
 * the fences of its last VTPU_QUEUE_HISTORY jobs for the WAIT ioctl, and
 * a submit waits for the oldest of them to signal before it takes its
 * slot. What a client's jobs pin (their number, their streams and handle
 * lists) is charged to its struct vtpu_usage, against the client_jobs
 * and client_job_mb limits.
 *
 * The fences of one queue signal in order, cancellation included: a
 * queue's kill lets its running job end first, then cancels the rest in
 * order, under the queue's lock. A job joins its queue under that lock
 * when it is armed (held until its submitter lets it run), so a submit
 * racing with a kill either finds the queue dead (-ENOENT) or has its
 * job cancelled in its place.
 */
#include <linux/capability.h>
#include <linux/fcntl.h>
#include <linux/file.h>
#include <linux/module.h>
#include <linux/sched/signal.h>
#include <linux/slab.h>
#include <linux/sync_file.h>
#include <linux/uaccess.h>

#include "vtpu_drv.h"
#include "vtpu_trace.h"

/* ---- fences -------------------------------------------------------------- */

static const char *vtpu_fence_driver_name(struct dma_fence *fence)
{
	return "vtpu";
}

static const char *vtpu_fence_timeline_name(struct dma_fence *fence)
{
	return container_of(fence, struct vtpu_fence, base)->timeline;
}

/* A fence in a sync_file may outlive every client: it pins the module. */
static void vtpu_fence_release(struct dma_fence *fence)
{
	dma_fence_free(fence);
	module_put(THIS_MODULE);
}

static const struct dma_fence_ops vtpu_fence_ops = {
	.get_driver_name = vtpu_fence_driver_name,
	.get_timeline_name = vtpu_fence_timeline_name,
	.release = vtpu_fence_release,
};

/* ---- what a client pins ------------------------------------------------- */

struct vtpu_usage *vtpu_usage_create(void)
{
	struct vtpu_usage *usage = kzalloc(sizeof(*usage), GFP_KERNEL_ACCOUNT);

	if (usage)
		kref_init(&usage->ref);
	return usage;
}

static void vtpu_usage_release(struct kref *ref)
{
	kfree(container_of(ref, struct vtpu_usage, ref));
}

void vtpu_usage_put(struct vtpu_usage *usage)
{
	kref_put(&usage->ref, vtpu_usage_release);
}

/*
 * Charge one job pinning @bytes. Return: 0, or -ENOSPC past a limit (not
 * -EAGAIN: libdrm's drmIoctl() would spin on it).
 */
static int vtpu_usage_charge(struct vtpu_usage *usage, u64 bytes)
{
	u64 max_bytes = (u64)vtpu_param_client_job_mb << 20;

	if (atomic_inc_return(&usage->jobs) > vtpu_param_client_jobs) {
		atomic_dec(&usage->jobs);
		return -ENOSPC;
	}
	if (atomic64_add_return(bytes, &usage->bytes) > max_bytes) {
		atomic64_sub(bytes, &usage->bytes);
		atomic_dec(&usage->jobs);
		return -ENOSPC;
	}
	return 0;
}

static void vtpu_usage_uncharge(struct vtpu_usage *usage, u64 bytes)
{
	atomic64_sub(bytes, &usage->bytes);
	atomic_dec(&usage->jobs);
}

/* ---- queues -------------------------------------------------------------- */

static void vtpu_queue_release(struct kref *ref)
{
	struct vtpu_queue *q = container_of(ref, struct vtpu_queue, ref);
	unsigned int i;

	for (i = 0; i < VTPU_QUEUE_HISTORY; i++)
		dma_fence_put(q->history[i]);
	vtpu_usage_put(q->usage);
	mutex_destroy(&q->lock);
	kfree(q);
}

static void vtpu_queue_put(struct vtpu_queue *q)
{
	kref_put(&q->ref, vtpu_queue_release);
}

static struct vtpu_queue *vtpu_queue_lookup(struct vtpu_file *vfile, u32 id)
{
	struct vtpu_queue *q;

	xa_lock(&vfile->queues);
	q = xa_load(&vfile->queues, id);
	if (q)
		kref_get(&q->ref);
	xa_unlock(&vfile->queues);
	return q;
}

int vtpu_queue_create_ioctl(struct vtpu_file *vfile, void *data,
			    struct vtpu_ioctl_undo *undo)
{
	struct vtpu_device *vdev = vfile->vdev;
	struct vtpu_queue_create *args = data;
	struct vtpu_queue *q;
	u32 id;
	int ret;

	if (args->flags || args->pad ||
	    args->priority > VTPU_QUEUE_PRIORITY_HIGH)
		return -EINVAL;
	/* a HIGH queue can starve every other client: an admin's choice */
	if (args->priority == VTPU_QUEUE_PRIORITY_HIGH &&
	    !capable(CAP_SYS_NICE))
		return -EACCES;

	q = kzalloc(sizeof(*q), GFP_KERNEL_ACCOUNT);
	if (!q)
		return -ENOMEM;
	kref_init(&q->ref);
	q->vdev = vdev;
	kref_get(&vfile->usage->ref);
	q->usage = vfile->usage;
	q->priority = args->priority;
	/*
	 * A queue's own watchdog may be shorter than the device's, never
	 * longer: the device's is what other clients may have to wait.
	 */
	q->timeout_ms = min_not_zero(args->timeout_ms,
				     vtpu_param_job_timeout_ms);
	q->in_fence_timeout_ms = args->in_fence_timeout_ms ?:
				 vtpu_param_in_fence_timeout_ms;
	q->fence_context = dma_fence_context_alloc(1);
	INIT_LIST_HEAD(&q->pending);
	mutex_init(&q->lock);

	ret = xa_alloc(&vfile->queues, &id, q, XA_LIMIT(1, VTPU_MAX_QUEUES),
		       GFP_KERNEL);
	if (ret) {
		vtpu_queue_put(q);
		return ret == -EBUSY ? -ENOSPC : ret;
	}
	q->id = id;

	spin_lock(&vdev->sched_lock);
	list_add_tail(&q->node, &vdev->queues);
	spin_unlock(&vdev->sched_lock);

	undo->queue = q;
	undo->queue_id = id;
	args->queue_id = id;
	args->timeout_ms = q->timeout_ms;
	args->in_fence_timeout_ms = q->in_fence_timeout_ms;
	return 0;
}

/* Complete every job of @jobs (off any queue) -ECANCELED, in order. */
static void vtpu_job_cancel_list(struct list_head *jobs)
{
	struct vtpu_kjob *job, *tmp;

	list_for_each_entry_safe(job, tmp, jobs, node) {
		list_del_init(&job->node);
		vtpu_job_complete(job, -ECANCELED);
	}
}

/*
 * Take the queue off the device: the running job is told to stop at its
 * next tile, and once its fence has signalled, the jobs not started are
 * cancelled, in order (the fences of one context signal in order). The
 * caller's reference (from the file's xarray) is dropped.
 */
static void vtpu_queue_kill(struct vtpu_queue *q)
{
	struct vtpu_device *vdev = q->vdev;
	struct dma_fence *running = NULL;
	LIST_HEAD(cancel);

	mutex_lock(&q->lock);
	spin_lock(&vdev->sched_lock);
	q->dead = true;
	list_del_init(&q->node);
	list_splice_init(&q->pending, &cancel);
	if (q->running) {
		WRITE_ONCE(q->running->abort, -ECANCELED);
		running = dma_fence_get(&q->running->fence->base);
	}
	spin_unlock(&vdev->sched_lock);

	if (running) {
		/* a tile or so: the job stops at its next step */
		dma_fence_wait(running, false);
		dma_fence_put(running);
	}
	vtpu_job_cancel_list(&cancel);
	mutex_unlock(&q->lock);
	vtpu_queue_put(q);
}

int vtpu_queue_destroy_ioctl(struct vtpu_file *vfile, void *data,
			     struct vtpu_ioctl_undo *undo)
{
	struct vtpu_queue_destroy *args = data;
	struct vtpu_queue *q;

	if (args->pad)
		return -EINVAL;
	q = xa_erase(&vfile->queues, args->queue_id);
	if (!q)
		return -ENOENT;
	vtpu_queue_kill(q);
	return 0;
}

/*
 * The caller never learnt of @undo's new queue (its struct could not be
 * copied back): destroy it, if it is still that queue.
 */
static void vtpu_queue_undo(struct vtpu_file *vfile,
			    struct vtpu_ioctl_undo *undo)
{
	if (xa_cmpxchg(&vfile->queues, undo->queue_id, undo->queue, NULL, 0) ==
	    undo->queue)
		vtpu_queue_kill(undo->queue);
}

void vtpu_file_queues_fini(struct vtpu_file *vfile)
{
	struct vtpu_queue *q;
	unsigned long id;

	xa_for_each(&vfile->queues, id, q) {
		xa_erase(&vfile->queues, id);
		vtpu_queue_kill(q);
	}
	xa_destroy(&vfile->queues);
}

/* ---- jobs ---------------------------------------------------------------- */

static void vtpu_job_put_bos(struct vtpu_kjob *job)
{
	while (job->nbufs)
		vtpu_bo_put(job->bos[--job->nbufs]);
}

static void vtpu_job_release(struct kref *ref)
{
	struct vtpu_kjob *job = container_of(ref, struct vtpu_kjob, ref);

	vtpu_job_put_bos(job);
	if (job->in_fence)
		dma_fence_put(job->in_fence);
	if (job->fence)
		dma_fence_put(&job->fence->base);
	kvfree(job->strides);
	kvfree(job->written);
	kvfree(job->bufs);
	kvfree(job->bos);
	kvfree(job->cmds);
	if (job->pinned)
		vtpu_usage_uncharge(job->queue->usage, job->pinned);
	vtpu_queue_put(job->queue);
	kfree(job);
}

void vtpu_job_put(struct vtpu_kjob *job)
{
	kref_put(&job->ref, vtpu_job_release);
}

/*
 * End a job that is on no list: signal its fence (with @error set when it
 * did not succeed), count it, and drop the scheduler's reference. Buffers
 * are released here rather than at the last put, so memory returns as
 * soon as the job is over.
 */
void vtpu_job_complete(struct vtpu_kjob *job, int error)
{
	struct vtpu_stats *st = &job->queue->vdev->stats;

	if (job->in_fence) {
		dma_fence_remove_callback(job->in_fence, &job->in_cb);
		dma_fence_put(job->in_fence);
		job->in_fence = NULL;
	}
	vtpu_job_put_bos(job);

	if (!error)
		atomic64_inc(&st->jobs_completed);
	else if (error == -ETIMEDOUT)
		atomic64_inc(&st->jobs_timedout);
	else if (error == -ECANCELED)
		atomic64_inc(&st->jobs_cancelled);
	else
		atomic64_inc(&st->jobs_failed);

	/*
	 * Traced before the fence signals, as the counts are updated: a
	 * waiter woken by the fence finds the job done in the trace too
	 * (vtpu_observe's tracepoints_job_life read it too early, at times,
	 * on the debug kernel)
	 */
	dev_dbg(job->queue->vdev->dev, "queue %u job %llu: %d\n",
		job->queue->id, job->seqno, error);
	trace_vtpu_job_done(job, error);
	if (error)
		dma_fence_set_error(&job->fence->base, error);
	dma_fence_signal(&job->fence->base);
	vtpu_job_put(job);
}

/* May run in any context, with the in-fence's lock held. */
static void vtpu_job_in_fence_cb(struct dma_fence *fence,
				 struct dma_fence_cb *cb)
{
	struct vtpu_kjob *job = container_of(cb, struct vtpu_kjob, in_cb);

	job->in_fence_error = fence->error;
	trace_vtpu_job_deps_done(job);
	/* pairs with smp_load_acquire() in the dispatcher */
	smp_store_release(&job->in_fence_done, true);
	vtpu_sched_kick(job->queue->vdev);
}

/*
 * Look up every handle; a handle listed twice is refused (aliasing).
 * Return: 0 with @ro[i] set for each read-only handle and *@any_ro when
 * there is one, or -errno.
 */
static int vtpu_job_get_bos(struct vtpu_file *vfile, struct vtpu_kjob *job,
			    const u32 *handles, u32 count, u64 *sizes,
			    bool *ro, bool *any_ro)
{
	struct vtpu_kbo *bo;
	u32 i, j;

	*any_ro = false;
	for (i = 0; i < count; i++) {
		bo = vtpu_bo_lookup_ro(vfile, handles[i], &ro[i]);
		if (!bo)
			return -ENOENT;
		*any_ro |= ro[i];
		job->bos[job->nbufs++] = bo;
		for (j = 0; j < i; j++)
			if (job->bos[j] == bo)
				return -EINVAL;
		job->bufs[i].base = bo->vaddr;
		job->bufs[i].size = bo->size;
		sizes[i] = bo->size;
	}
	return 0;
}

static int vtpu_job_get_strides(struct vtpu_kjob *job, struct vtpu_submit *args)
{
	job->strides = kvmalloc_array(job->nbufs, sizeof(*job->strides),
				      GFP_KERNEL_ACCOUNT);
	if (!job->strides)
		return -ENOMEM;
	if (copy_from_user(job->strides, u64_to_user_ptr(args->strides_ptr),
			   (size_t)job->nbufs * sizeof(*job->strides)))
		return -EFAULT;
	return 0;
}

/* Return: the index of @job's buffer @p is in, or -1. */
static int vtpu_job_addr_buf(const struct vtpu_kjob *job, const u8 *p)
{
	u32 i;

	for (i = 0; i < job->nbufs; i++) {
		const u8 *base = job->bos[i]->vaddr;

		if (p >= base && p < base + job->bos[i]->size)
			return i;
	}
	return -1;
}

/*
 * Which of @job's buffers its commands write: @first[i] is the index of
 * the first command that writes buffer i (U32_MAX: none), @at[i] that
 * command's byte offset in the stream.
 */
static void vtpu_job_find_writes(const struct vtpu_kjob *job, u32 *first,
				 u32 *at)
{
	struct vtpu_engine_span spans[VTPU_ENGINE_SPANS_MAX];
	const struct vtpu_cmd_hdr *cmd;
	u32 pos = 0, off = 0, index = 0, n, i;
	int b;

	for (i = 0; i < job->nbufs; i++)
		first[i] = U32_MAX;
	while ((cmd = vtpu_engine_next(job->cmds, job->cmds_size, &pos))) {
		n = min_t(u32, vtpu_engine_spans(cmd, job->bufs, spans),
			  VTPU_ENGINE_SPANS_MAX);
		for (i = 0; i < n; i++) {
			if (!spans[i].write || spans[i].lo == spans[i].hi)
				continue;
			b = vtpu_job_addr_buf(job, spans[i].lo);
			if (b >= 0 && first[b] == U32_MAX) {
				first[b] = index;
				at[b] = off;
			}
		}
		off = pos;
		index++;
	}
}

/*
 * A validated stream may write only writable buffers: a read-only handle
 * (from a read-only export) is refused as any operand a command writes.
 * Also notes in job->written which buffers the job writes, for implicit
 * sync. Return: 0, -ENOMEM, or -EACCES with the command named in @args.
 */
static int vtpu_job_check_writes(struct vtpu_kjob *job, const bool *ro,
				 struct vtpu_submit *args)
{
	u32 *first, *at, i, bad = U32_MAX;
	int ret = 0;

	first = kvmalloc_array(job->nbufs, sizeof(*first), GFP_KERNEL);
	at = kvmalloc_array(job->nbufs, sizeof(*at), GFP_KERNEL);
	job->written = kvcalloc(job->nbufs, sizeof(*job->written),
				GFP_KERNEL_ACCOUNT);
	if (!first || !at || !job->written) {
		ret = -ENOMEM;
		goto out;
	}
	vtpu_job_find_writes(job, first, at);
	for (i = 0; i < job->nbufs; i++) {
		job->written[i] = first[i] != U32_MAX;
		if (ro[i] && job->written[i] &&
		    (bad == U32_MAX || first[i] < first[bad]))
			bad = i;
	}
	if (bad != U32_MAX) {
		args->error_cmd = first[bad];
		args->error_offset = at[bad];
		args->error_operand = VTPU_OPERAND_NONE;
		args->error_reason = VTPU_ERR_READ_ONLY;
		ret = -EACCES;
	}
out:
	kvfree(at);
	kvfree(first);
	return ret;
}

/* Does @job use a read-only handle, or a buffer shared as a dma-buf? */
static bool vtpu_job_needs_writes(const struct vtpu_kjob *job, bool any_ro)
{
	u32 i;

	if (any_ro)
		return true;
	for (i = 0; i < job->nbufs; i++)
		if (vtpu_bo_resv(job->bos[i]))
			return true;
	return false;
}

static int vtpu_job_validate(struct vtpu_file *vfile, struct vtpu_kjob *job,
			     struct vtpu_submit *args)
{
	struct vtpu_engine_error err;
	bool any_ro, *ro;
	u32 *handles;
	u64 *sizes;
	int ret;

	handles = kvmalloc_array(args->handle_count + 1, sizeof(*handles),
				 GFP_KERNEL);
	sizes = kvmalloc_array(args->handle_count + 1, sizeof(*sizes),
			       GFP_KERNEL);
	ro = kvmalloc_array(args->handle_count + 1, sizeof(*ro), GFP_KERNEL);
	if (!handles || !sizes || !ro) {
		ret = -ENOMEM;
		goto out;
	}
	if (copy_from_user(handles, u64_to_user_ptr(args->handles_ptr),
			   (size_t)args->handle_count * sizeof(*handles))) {
		ret = -EFAULT;
		goto out;
	}
	ret = vtpu_job_get_bos(vfile, job, handles, args->handle_count, sizes,
			       ro, &any_ro);
	if (ret)
		goto out;
	if (args->strides_ptr) {
		ret = vtpu_job_get_strides(job, args);
		if (ret)
			goto out;
	}

	/* every iteration of a repeated job, before anything runs */
	ret = vtpu_engine_validate_iters(job->cmds, job->cmds_size, sizes,
					 args->handle_count, job->strides,
					 job->first_iter, job->repeat, &err);
	if (ret) {
		args->error_cmd = err.cmd;
		args->error_offset = err.offset;
		args->error_operand = err.operand;
		args->error_reason = err.reason;
		dev_dbg(vfile->vdev->dev,
			"submit rejected: command %u operand %u reason %u\n",
			err.cmd, err.operand, err.reason);
	} else if (vtpu_job_needs_writes(job, any_ro)) {
		ret = vtpu_job_check_writes(job, ro, args);
	}
out:
	kvfree(ro);
	kvfree(sizes);
	kvfree(handles);
	return ret;
}

/* What a job of @args pins in the kernel until it ends, in bytes. */
static u64 vtpu_job_size(const struct vtpu_submit *args)
{
	u64 n = (u64)args->handle_count + 1;

	return sizeof(struct vtpu_kjob) + sizeof(struct vtpu_fence) +
	       args->cmds_size +
	       n * (sizeof(struct vtpu_kbo *) + sizeof(struct vtpu_engine_buf) +
		    sizeof(bool) + (args->strides_ptr ? sizeof(u64) : 0));
}

static struct vtpu_kjob *vtpu_job_create(struct vtpu_file *vfile,
					 struct vtpu_queue *q,
					 struct vtpu_submit *args)
{
	u32 n = args->handle_count;
	struct vtpu_kjob *job;
	u64 pinned = vtpu_job_size(args);
	int ret;

	/* before anything is allocated: a client over its limits pins no more */
	ret = vtpu_usage_charge(q->usage, pinned);
	if (ret)
		return ERR_PTR(ret);
	job = kzalloc(sizeof(*job), GFP_KERNEL_ACCOUNT);
	if (!job) {
		vtpu_usage_uncharge(q->usage, pinned);
		return ERR_PTR(-ENOMEM);
	}
	job->pinned = pinned;
	kref_init(&job->ref);
	INIT_LIST_HEAD(&job->node);
	/* removing a callback never added must find it unlinked */
	INIT_LIST_HEAD(&job->in_cb.node);
	kref_get(&q->ref);
	job->queue = q;
	job->cmds_size = args->cmds_size;
	job->repeat = args->repeat ?: 1;
	job->first_iter = args->first_iter;
	job->cmds = kvmalloc(args->cmds_size, GFP_KERNEL_ACCOUNT);
	job->bos = kvcalloc(n + 1, sizeof(*job->bos), GFP_KERNEL_ACCOUNT);
	job->bufs = kvcalloc(n + 1, sizeof(*job->bufs), GFP_KERNEL_ACCOUNT);
	job->fence = kzalloc(sizeof(*job->fence), GFP_KERNEL_ACCOUNT);
	if (!job->cmds || !job->bos || !job->bufs || !job->fence) {
		kfree(job->fence);
		job->fence = NULL;
		ret = -ENOMEM;
		goto err;
	}
	if (copy_from_user(job->cmds, u64_to_user_ptr(args->cmds_ptr),
			   args->cmds_size)) {
		ret = -EFAULT;
		goto err_free_fence;
	}
	ret = vtpu_job_validate(vfile, job, args);
	if (ret)
		goto err_free_fence;

	if (args->flags & VTPU_SUBMIT_IN_FENCE) {
		job->in_fence = sync_file_get_fence(args->in_fence_fd);
		if (!job->in_fence) {
			ret = -EINVAL;
			goto err_free_fence;
		}
	}
	return job;

err_free_fence:
	/* not initialised yet: freed directly, never through the fence ops */
	kfree(job->fence);
	job->fence = NULL;
err:
	vtpu_job_put(job);
	return ERR_PTR(ret);
}

/*
 * Give the job its seqno and fence, record the fence for WAIT, and put it
 * at the end of its queue, held (the dispatcher passes it by) until
 * vtpu_job_finish() releases it; the caller gets a reference of its own
 * for that. First waits for the job whose history slot this one takes to
 * end, so that WAIT never reports a running job retired.
 * Return: 0, -ENOENT when the queue was destroyed, or -ERESTARTSYS.
 */
static int vtpu_job_arm(struct vtpu_kjob *job)
{
	struct vtpu_queue *q = job->queue;
	struct vtpu_device *vdev = q->vdev;
	struct dma_fence **slot, *old;
	long ret;

	for (;;) {
		mutex_lock(&q->lock);
		if (q->dead) {
			mutex_unlock(&q->lock);
			return -ENOENT;
		}
		slot = &q->history[(q->last_seqno + 1) % VTPU_QUEUE_HISTORY];
		if (!*slot || dma_fence_is_signaled(*slot))
			break;
		old = dma_fence_get(*slot);
		mutex_unlock(&q->lock);
		ret = dma_fence_wait(old, true);
		dma_fence_put(old);
		if (ret)
			return ret;
	}

	spin_lock_init(&job->fence->lock);
	snprintf(job->fence->timeline, sizeof(job->fence->timeline),
		 "vtpu%u-q%u", vdev->index, q->id);
	__module_get(THIS_MODULE);	/* put by vtpu_fence_release() */
	job->seqno = ++q->last_seqno;
	dma_fence_init(&job->fence->base, &vtpu_fence_ops, &job->fence->lock,
		       q->fence_context, job->seqno);
	dma_fence_put(*slot);
	*slot = dma_fence_get(&job->fence->base);

	if (job->in_fence) {
		job->wait_forever = !q->in_fence_timeout_ms;
		job->wait_deadline = jiffies +
				     msecs_to_jiffies(q->in_fence_timeout_ms);
		ret = dma_fence_add_callback(job->in_fence, &job->in_cb,
					     vtpu_job_in_fence_cb);
		if (ret) { /* already signalled */
			job->in_fence_error = job->in_fence->error;
			job->in_fence_done = true;
		}
	}
	trace_vtpu_job_submit(job);
	if (!job->in_fence || job->in_fence_done)
		trace_vtpu_job_deps_done(job);

	kref_get(&job->ref);	/* the submitter's, put by vtpu_job_finish() */
	job->held = true;
	/* under q->lock: a kill (which holds it) cancels this job in order */
	spin_lock(&vdev->sched_lock);
	list_add_tail(&job->node, &q->pending);
	spin_unlock(&vdev->sched_lock);
	mutex_unlock(&q->lock);
	atomic64_inc(&vdev->stats.jobs_submitted);
	return 0;
}

/*
 * Release a job vtpu_job_arm() held: to run, or, with @error, to end with
 * it where it stands in its queue (so that its fence still signals in
 * order); a job a kill has cancelled meanwhile is over already.
 */
static void vtpu_job_release_held(struct vtpu_kjob *job, int error)
{
	struct vtpu_device *vdev = job->queue->vdev;

	spin_lock(&vdev->sched_lock);
	if (error)
		cmpxchg(&job->abort, 0, error);
	job->held = false;
	spin_unlock(&vdev->sched_lock);
	vtpu_sched_kick(vdev);
	vtpu_job_put(job);
}

/*
 * After SUBMIT or QUEUE_CREATE succeeded: whether the caller saw its
 * struct (@copied). A job runs only if it did (else it is cancelled in
 * order); a queue the caller never learnt of is destroyed.
 */
void vtpu_job_finish(struct vtpu_file *vfile, struct vtpu_ioctl_undo *undo,
		     bool copied)
{
	if (undo->job)
		vtpu_job_release_held(undo->job, copied ? 0 : -ECANCELED);
	if (undo->queue && !copied)
		vtpu_queue_undo(vfile, undo);
}

int vtpu_submit_ioctl(struct vtpu_file *vfile, void *data,
		      struct vtpu_ioctl_undo *undo)
{
	struct vtpu_submit *args = data;
	struct vtpu_implicit imp = { .n = 0 };
	struct sync_file *sync_file;
	struct vtpu_queue *q;
	struct vtpu_kjob *job;
	int fd = -1;
	int ret;

	args->out_fence_fd = -1;
	args->seqno = 0;
	args->error_cmd = 0;
	args->error_offset = 0;
	args->error_operand = VTPU_OPERAND_NONE;
	args->error_reason = VTPU_ERR_NONE;

	if (args->flags & ~VTPU_SUBMIT_FLAGS)
		return -EINVAL;
	if (args->repeat > VTPU_MAX_REPEAT ||
	    (args->first_iter && !args->strides_ptr))
		return -EINVAL;
	if (args->cmds_size < sizeof(struct vtpu_cmd_hdr) ||
	    args->cmds_size > VTPU_MAX_CMDS_SIZE || args->cmds_size % 8)
		return -EINVAL;
	if (args->handle_count > VTPU_MAX_HANDLES)
		return -EINVAL;

	q = vtpu_queue_lookup(vfile, args->queue_id);
	if (!q)
		return -ENOENT;
	job = vtpu_job_create(vfile, q, args);
	vtpu_queue_put(q);
	if (IS_ERR(job))
		return PTR_ERR(job);

	if (args->flags & VTPU_SUBMIT_OUT_FENCE) {
		fd = get_unused_fd_flags(O_CLOEXEC);
		if (fd < 0) {
			ret = fd;
			goto err_put_job;
		}
	}
	/* a buffer shared meanwhile (job->written NULL) counts as written */
	if (!(args->flags & VTPU_SUBMIT_NO_IMPLICIT_SYNC)) {
		ret = vtpu_implicit_begin(job, &imp, job->written);
		if (ret)
			goto err_put_fd;
	}
	ret = vtpu_job_arm(job);
	if (ret) {
		vtpu_implicit_end(&imp);
		goto err_put_fd;
	}
	vtpu_implicit_publish(job, &imp);

	/* From here on the job is on its queue and ends through complete. */
	if (fd >= 0) {
		sync_file = sync_file_create(&job->fence->base);
		if (!sync_file) {
			put_unused_fd(fd);
			vtpu_job_release_held(job, -ENOMEM);
			return -ENOMEM;
		}
		/* installed by vtpu_ioctl() once @args is back in user space */
		undo->file = sync_file->file;
		undo->fd = fd;
		args->out_fence_fd = fd;
	}
	undo->job = job;
	args->seqno = job->seqno;
	return 0;

err_put_fd:
	if (fd >= 0)
		put_unused_fd(fd);
err_put_job:
	kfree(job->fence);	/* not armed: not a live fence yet */
	job->fence = NULL;
	vtpu_job_put(job);
	return ret;
}

/* ---- wait ---------------------------------------------------------------- */

static long vtpu_timeout_jiffies(s64 deadline_ns)
{
	s64 now = ktime_get_ns();
	u64 j;

	if (deadline_ns <= now)
		return 0;
	if (deadline_ns == S64_MAX)
		return MAX_SCHEDULE_TIMEOUT;
	j = nsecs_to_jiffies64(deadline_ns - now);
	return j >= MAX_SCHEDULE_TIMEOUT ? MAX_SCHEDULE_TIMEOUT - 1 : j + 1;
}

static u32 vtpu_status_of(int error)
{
	switch (error) {
	case 0:
		return VTPU_JOB_DONE;
	case -ECANCELED:
		return VTPU_JOB_CANCELLED;
	case -ETIMEDOUT:
		return VTPU_JOB_TIMEDOUT;
	default:
		return VTPU_JOB_ERROR;
	}
}

int vtpu_wait_ioctl(struct vtpu_file *vfile, void *data,
		    struct vtpu_ioctl_undo *undo)
{
	struct vtpu_wait *args = data;
	struct dma_fence *fence = NULL;
	struct vtpu_queue *q;
	long ret;

	args->status = VTPU_JOB_PENDING;
	args->error = 0;
	if (args->flags || !args->seqno)
		return -EINVAL;
	q = vtpu_queue_lookup(vfile, args->queue_id);
	if (!q)
		return -ENOENT;

	mutex_lock(&q->lock);
	if (args->seqno > q->last_seqno)
		ret = -EINVAL;
	else if (q->last_seqno - args->seqno >= VTPU_QUEUE_HISTORY)
		ret = 1;	/* retired: its slot was taken once it had ended */
	else
		fence = dma_fence_get(q->history[args->seqno %
						 VTPU_QUEUE_HISTORY]);
	mutex_unlock(&q->lock);
	vtpu_queue_put(q);

	if (!fence) {
		if (ret == 1) {
			args->status = VTPU_JOB_RETIRED;
			ret = 0;
		}
		return ret;
	}

	ret = dma_fence_wait_timeout(fence, true,
				     vtpu_timeout_jiffies(args->timeout_ns));
	if (ret > 0) {
		args->error = fence->error;
		args->status = vtpu_status_of(fence->error);
		ret = 0;
	} else if (ret == 0) {
		ret = -ETIME;
	}
	dma_fence_put(fence);
	return ret;
}
