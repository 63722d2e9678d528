// SPDX-License-Identifier: GPL-2.0-only
/*
 * Queues, submission, fences and waiting.
 *
 * A submit copies the command stream and the handle list in, takes a
 * reference on every buffer, and validates the whole stream with the
 * engine before anything is queued. Each job gets a dma_fence on its
 * queue's timeline (exported as a sync_file on request); the queue keeps
 * the fences of its last VTPU_QUEUE_HISTORY jobs for the WAIT ioctl.
 */
#include <linux/fcntl.h>
#include <linux/file.h>
#include <linux/module.h>
#include <linux/sched/signal.h>
#include <linux/slab.h>
#include <linux/sync_file.h>
#include <linux/uaccess.h>

#include "vtpu_drv.h"

/* ---- fences -------------------------------------------------------------- */

static const char *vtpu_fence_driver_name(struct dma_fence *fence)
{
	return "vtpu";
}

static const char *vtpu_fence_timeline_name(struct dma_fence *fence)
{
	return "vtpu-queue";
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

/* ---- queues -------------------------------------------------------------- */

static void vtpu_queue_release(struct kref *ref)
{
	struct vtpu_queue *q = container_of(ref, struct vtpu_queue, ref);
	unsigned int i;

	for (i = 0; i < VTPU_QUEUE_HISTORY; i++)
		dma_fence_put(q->history[i]);
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

int vtpu_queue_create_ioctl(struct vtpu_file *vfile, void *data)
{
	struct vtpu_device *vdev = vfile->vdev;
	struct vtpu_queue_create *args = data;
	struct vtpu_queue *q;
	u32 id;
	int ret;

	if (args->flags || args->priority > VTPU_QUEUE_PRIORITY_HIGH)
		return -EINVAL;

	q = kzalloc(sizeof(*q), GFP_KERNEL_ACCOUNT);
	if (!q)
		return -ENOMEM;
	kref_init(&q->ref);
	q->vdev = vdev;
	q->priority = args->priority;
	q->timeout_ms = args->timeout_ms ?: vtpu_param_job_timeout_ms;
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

	args->queue_id = id;
	return 0;
}

/*
 * Take the queue off the device: jobs not started are cancelled, the
 * running one is told to stop at its next tile. The caller's reference
 * (from the file's xarray) is dropped.
 */
static void vtpu_queue_kill(struct vtpu_queue *q)
{
	struct vtpu_device *vdev = q->vdev;
	struct vtpu_job *job, *tmp;
	LIST_HEAD(cancel);

	spin_lock(&vdev->sched_lock);
	q->dead = true;
	list_del_init(&q->node);
	list_splice_init(&q->pending, &cancel);
	if (q->running)
		WRITE_ONCE(q->running->abort, -ECANCELED);
	spin_unlock(&vdev->sched_lock);

	list_for_each_entry_safe(job, tmp, &cancel, node) {
		list_del_init(&job->node);
		vtpu_job_complete(job, -ECANCELED);
	}
	vtpu_queue_put(q);
}

int vtpu_queue_destroy_ioctl(struct vtpu_file *vfile, void *data)
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

static void vtpu_job_put_bos(struct vtpu_job *job)
{
	while (job->nbufs)
		vtpu_bo_put(job->bos[--job->nbufs]);
}

static void vtpu_job_release(struct kref *ref)
{
	struct vtpu_job *job = container_of(ref, struct vtpu_job, ref);

	vtpu_job_put_bos(job);
	if (job->in_fence)
		dma_fence_put(job->in_fence);
	if (job->fence)
		dma_fence_put(&job->fence->base);
	kvfree(job->strides);
	kvfree(job->bufs);
	kvfree(job->bos);
	kvfree(job->cmds);
	vtpu_queue_put(job->queue);
	kfree(job);
}

void vtpu_job_put(struct vtpu_job *job)
{
	kref_put(&job->ref, vtpu_job_release);
}

/*
 * End a job that is on no list: signal its fence (with @error set when it
 * did not succeed), count it, and drop the scheduler's reference. Buffers
 * are released here rather than at the last put, so memory returns as
 * soon as the job is over.
 */
void vtpu_job_complete(struct vtpu_job *job, int error)
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

	if (error)
		dma_fence_set_error(&job->fence->base, error);
	dma_fence_signal(&job->fence->base);
	vtpu_dbg(job->queue->vdev, VTPU_DBG_JOB, "queue %u job %llu: %d\n",
		 job->queue->id, job->seqno, error);
	vtpu_job_put(job);
}

/* May run in any context, with the in-fence's lock held. */
static void vtpu_job_in_fence_cb(struct dma_fence *fence,
				 struct dma_fence_cb *cb)
{
	struct vtpu_job *job = container_of(cb, struct vtpu_job, in_cb);

	job->in_fence_error = fence->error;
	/* pairs with smp_load_acquire() in the dispatcher */
	smp_store_release(&job->in_fence_done, true);
	vtpu_sched_kick(job->queue->vdev);
}

/* Look up every handle; a handle listed twice is refused (aliasing). */
static int vtpu_job_get_bos(struct vtpu_file *vfile, struct vtpu_job *job,
			    const u32 *handles, u32 count, u64 *sizes)
{
	struct vtpu_bo *bo;
	u32 i, j;

	for (i = 0; i < count; i++) {
		bo = vtpu_bo_lookup(vfile, handles[i]);
		if (!bo)
			return -ENOENT;
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

static int vtpu_job_get_strides(struct vtpu_job *job, struct vtpu_submit *args)
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

static int vtpu_job_validate(struct vtpu_file *vfile, struct vtpu_job *job,
			     struct vtpu_submit *args)
{
	struct vtpu_engine_error err;
	u32 *handles;
	u64 *sizes;
	int ret;

	handles = kvmalloc_array(args->handle_count + 1, sizeof(*handles),
				 GFP_KERNEL);
	sizes = kvmalloc_array(args->handle_count + 1, sizeof(*sizes),
			       GFP_KERNEL);
	if (!handles || !sizes) {
		ret = -ENOMEM;
		goto out;
	}
	if (copy_from_user(handles, u64_to_user_ptr(args->handles_ptr),
			   (size_t)args->handle_count * sizeof(*handles))) {
		ret = -EFAULT;
		goto out;
	}
	ret = vtpu_job_get_bos(vfile, job, handles, args->handle_count, sizes);
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
		vtpu_dbg(vfile->vdev, VTPU_DBG_JOB,
			 "submit rejected: command %u operand %u reason %u\n",
			 err.cmd, err.operand, err.reason);
	}
out:
	kvfree(sizes);
	kvfree(handles);
	return ret;
}

static struct vtpu_job *vtpu_job_create(struct vtpu_file *vfile,
					struct vtpu_queue *q,
					struct vtpu_submit *args)
{
	u32 n = args->handle_count;
	struct vtpu_job *job;
	int ret;

	job = kzalloc(sizeof(*job), GFP_KERNEL_ACCOUNT);
	if (!job)
		return ERR_PTR(-ENOMEM);
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

/* Give the job its seqno and fence; record the fence for WAIT. */
static void vtpu_job_arm(struct vtpu_job *job)
{
	struct vtpu_queue *q = job->queue;
	struct dma_fence **slot;

	spin_lock_init(&job->fence->lock);
	__module_get(THIS_MODULE);	/* put by vtpu_fence_release() */

	mutex_lock(&q->lock);
	job->seqno = ++q->last_seqno;
	dma_fence_init(&job->fence->base, &vtpu_fence_ops, &job->fence->lock,
		       q->fence_context, job->seqno);
	slot = &q->history[job->seqno % VTPU_QUEUE_HISTORY];
	dma_fence_put(*slot);
	*slot = dma_fence_get(&job->fence->base);
	mutex_unlock(&q->lock);
	atomic64_inc(&q->vdev->stats.jobs_submitted);
}

/* Hand the job to the dispatcher, or cancel it if the queue just died. */
static void vtpu_job_queue(struct vtpu_job *job)
{
	struct vtpu_device *vdev = job->queue->vdev;
	unsigned long timeout = msecs_to_jiffies(job->queue->timeout_ms);
	int ret;

	if (job->in_fence) {
		job->wait_deadline = jiffies + timeout;
		ret = dma_fence_add_callback(job->in_fence, &job->in_cb,
					     vtpu_job_in_fence_cb);
		if (ret) { /* already signalled */
			job->in_fence_error = job->in_fence->error;
			job->in_fence_done = true;
		}
	}

	spin_lock(&vdev->sched_lock);
	if (!job->queue->dead) {
		list_add_tail(&job->node, &job->queue->pending);
		job = NULL;
	}
	spin_unlock(&vdev->sched_lock);

	if (job)
		vtpu_job_complete(job, -ECANCELED);
	else
		vtpu_sched_kick(vdev);
}

int vtpu_submit_ioctl(struct vtpu_file *vfile, void *data)
{
	struct vtpu_submit *args = data;
	struct sync_file *sync_file = NULL;
	struct vtpu_queue *q;
	struct vtpu_job *job;
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

	/* From here on the job has a seqno and must end through complete. */
	vtpu_job_arm(job);
	if (fd >= 0) {
		sync_file = sync_file_create(&job->fence->base);
		if (!sync_file) {
			put_unused_fd(fd);
			vtpu_job_complete(job, -ENOMEM);
			return -ENOMEM;
		}
	}
	args->seqno = job->seqno;
	vtpu_job_queue(job);	/* the job may be gone after this */

	if (sync_file) {
		fd_install(fd, sync_file->file);
		args->out_fence_fd = fd;
	}
	return 0;

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

int vtpu_wait_ioctl(struct vtpu_file *vfile, void *data)
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
		ret = 1;	/* retired */
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
