// SPDX-License-Identifier: GPL-2.0-only
/*
 * The per-device dispatcher and its matrix workers.
 *
 * One dispatcher thread per device picks the next job: the highest
 * priority first, round-robin between queues of a priority, one job per
 * queue at a time (a queue's jobs run in order). It runs the job's commands
 * in order, a group at a time: a run of commands that do not depend on
 * each other (vtpu_engine_group_add()) runs as one, its tiles shared
 * between the worker threads and the dispatcher itself, one tile at a
 * time, and the next group starts when all of them are done. A tile's
 * steps run in order, each inside its own short kernel_fpu_begin()/end()
 * section, and between steps a worker may be preempted and checks whether
 * the job was cancelled or overran its job_timeout_ms.
 */
#include <linux/delay.h>
#include <linux/kthread.h>
#include <linux/sched.h>
#include <linux/slab.h>

#include "vtpu_drv.h"
#include "vtpu_trace.h"

/* Something may have become runnable: a submit, a signalled in-fence. */
void vtpu_sched_kick(struct vtpu_device *vdev)
{
	atomic_inc(&vdev->kicks);
	wake_up(&vdev->sched_wq);
}

/* Has the job's in-fence signalled? */
static bool vtpu_job_ready(struct vtpu_kjob *job)
{
	/* pairs with smp_store_release() in vtpu_job_in_fence_cb() */
	return smp_load_acquire(&job->in_fence_done);
}

/*
 * Return: the next job to run, taken off its queue, or NULL. Sets *waiting
 * when a queue's next job waits for an in-fence with a deadline (which the
 * dispatcher must then poll). A job still held by its submitter
 * (vtpu_job_arm()) holds its queue up until it is released; an aborted
 * one need not wait for its in-fence.
 */
static struct vtpu_kjob *vtpu_sched_pick(struct vtpu_device *vdev,
					 bool *waiting)
{
	struct vtpu_queue *q;
	struct vtpu_kjob *job;
	int prio;

	spin_lock(&vdev->sched_lock);
	for (prio = VTPU_NUM_PRIO - 1; prio >= 0; prio--) {
		list_for_each_entry(q, &vdev->queues, node) {
			if (q->priority != prio || q->running ||
			    list_empty(&q->pending))
				continue;
			job = list_first_entry(&q->pending, struct vtpu_kjob,
					       node);
			if (job->held)
				continue;
			if (job->in_fence && !vtpu_job_ready(job) &&
			    !READ_ONCE(job->abort) &&
			    (job->wait_forever ||
			     time_before(jiffies, job->wait_deadline))) {
				*waiting |= !job->wait_forever;
				continue;
			}
			list_del_init(&job->node);
			q->running = job;
			/* round-robin: this queue goes behind its peers */
			list_move_tail(&q->node, &vdev->queues);
			spin_unlock(&vdev->sched_lock);
			return job;
		}
	}
	spin_unlock(&vdev->sched_lock);
	return NULL;
}

/*
 * Take a tile of the current group: the next from the front (@back false:
 * the dispatcher) or from the end (the workers), so that each core works
 * through a contiguous run of a command's tiles (one stream for its
 * prefetchers, its own columns of a GEMM's B) rather than every other
 * tile, and a group's first and last commands start side by side.
 */
static bool vtpu_exec_take(struct vtpu_exec *ex, bool back,
			   const struct vtpu_engine_op **op,
			   struct vtpu_kjob **job, u32 *tile)
{
	bool ok = false;
	u32 t;

	spin_lock(&ex->lock);
	if (ex->grp && ex->next_tile < ex->end_tile) {
		t = back ? --ex->end_tile : ex->next_tile++;
		*op = vtpu_engine_group_tile(ex->grp, t, tile);
		*job = ex->job;
		ok = true;
	}
	spin_unlock(&ex->lock);
	return ok;
}

static bool vtpu_exec_has_tiles(struct vtpu_exec *ex)
{
	bool ret;

	spin_lock(&ex->lock);
	ret = ex->grp && ex->next_tile < ex->end_tile;
	spin_unlock(&ex->lock);
	return ret;
}

/*
 * Run tiles of the current group until none are left to take; @back:
 * from the end (a worker).
 */
static void vtpu_exec_tiles(struct vtpu_device *vdev, void *scratch, bool back)
{
	struct vtpu_exec *ex = &vdev->exec;
	const struct vtpu_engine_op *op;
	struct vtpu_kjob *job;
	u32 tile, step, fp;

	while (vtpu_exec_take(ex, back, &op, &job, &tile)) {
		for (step = 0; step < op->nsteps; step++) {
			if (READ_ONCE(job->abort))
				break;
			if (time_after(jiffies, job->run_deadline)) {
				cmpxchg(&job->abort, 0, -ETIMEDOUT);
				break;
			}
			fp = vtpu_fpu_begin();
			vtpu_engine_op_run(op, tile, step, scratch);
			vtpu_fpu_end(fp);
			cond_resched();
		}
		spin_lock(&ex->lock);
		if (--ex->tiles_left == 0) {
			ex->grp = NULL;
			ex->job = NULL;
			complete(&ex->done);
		}
		spin_unlock(&ex->lock);
	}
}

/*
 * Publish the tiles of @grp's current phase to the workers, help run
 * them, and wait until they are done.
 */
static void vtpu_exec_phase(struct vtpu_device *vdev, struct vtpu_kjob *job,
			    const struct vtpu_engine_group *grp)
{
	struct vtpu_exec *ex = &vdev->exec;

	if (!grp->ntiles)
		return;
	reinit_completion(&ex->done);
	spin_lock(&ex->lock);
	ex->grp = grp;
	ex->job = job;
	ex->next_tile = 0;
	ex->end_tile = grp->ntiles;
	ex->tiles_left = grp->ntiles;
	spin_unlock(&ex->lock);

	if (grp->ntiles > 1 && vdev->nworkers)
		wake_up_all(&vdev->work_wq);
	vtpu_exec_tiles(vdev, vdev->dispatcher_scratch, false);
	wait_for_completion(&ex->done);
}

/*
 * Run @grp, one phase after the other: a phase's tiles may read what the
 * earlier phases' tiles wrote (vtpu_engine_group_phase()).
 */
static void vtpu_exec_group(struct vtpu_device *vdev, struct vtpu_kjob *job,
			    struct vtpu_engine_group *grp)
{
	u32 p;

	for (p = 0; p < grp->nphases; p++) {
		if (p && READ_ONCE(job->abort))
			break;
		vtpu_engine_group_phase(grp, p);
		vtpu_exec_phase(vdev, job, grp);
	}
}

/*
 * Run the gathered group, the commands from number @first of iteration
 * @iter; Return: 0, or the -errno that stops the job.
 */
static int vtpu_sched_run_group(struct vtpu_device *vdev, struct vtpu_kjob *job,
				u32 iter, u32 first, u64 *flops)
{
	struct vtpu_engine_group *grp = vdev->group;
	u32 ntiles = grp->ntiles;	/* all phases' */
	int err;

	vtpu_exec_group(vdev, job, grp);
	trace_vtpu_job_group(job, iter, first, grp->op[0].opcode, grp->nops,
			     ntiles);
	err = READ_ONCE(job->abort);
	if (!err && time_after(jiffies, job->run_deadline))
		err = -ETIMEDOUT;
	if (err)
		return err;
	*flops += grp->flops;
	cond_resched();
	return 0;
}

/* Point the engine at iteration @iter's view of every buffer. */
static void vtpu_job_set_iteration(struct vtpu_kjob *job, u64 iter)
{
	u32 j;

	for (j = 0; j < job->nbufs; j++)
		job->bufs[j].base = (u8 *)job->bos[j]->vaddr +
				    job->strides[j] * iter;
}

/* Return: 0, or the -errno that stopped the job. */
static int vtpu_sched_run_stream(struct vtpu_device *vdev,
				 struct vtpu_kjob *job, u32 iter, u64 *flops)
{
	struct vtpu_engine_group *grp = vdev->group;
	const struct vtpu_cmd_hdr *cmd;
	u32 pos = 0, fp, n = 0, first = 0;
	bool joined;
	int err = 0;

	vtpu_engine_group_clear(grp);
	while ((cmd = vtpu_engine_next(job->cmds, job->cmds_size, &pos))) {
		fp = vtpu_fpu_begin();
		joined = vtpu_engine_group_add(grp, cmd, job->bufs, vdev->simd,
					       vdev->nworkers + 1,
					       VTPU_ENGINE_GROUP_MAX);
		vtpu_fpu_end(fp);
		if (joined) {
			n++;
			continue;
		}
		/* it depends on the group: the group runs first */
		err = vtpu_sched_run_group(vdev, job, iter, first, flops);
		if (err)
			goto out;
		fp = vtpu_fpu_begin();
		vtpu_engine_group_restart(grp);
		vtpu_fpu_end(fp);
		first = n++;
	}
	if (grp->nops)
		err = vtpu_sched_run_group(vdev, job, iter, first, flops);
out:
	vtpu_engine_group_clear(grp);
	return err;
}

static void vtpu_sched_run_job(struct vtpu_device *vdev, struct vtpu_kjob *job)
{
	u64 start = ktime_get_ns();
	u64 flops = 0, ns;
	int err = READ_ONCE(job->abort);
	u32 iter;

	if (!err && job->in_fence) {
		if (!vtpu_job_ready(job))
			err = -ETIMEDOUT;	/* its in-fence never came */
		else if (job->in_fence_error)
			err = -ECANCELED;	/* a failed dependency */
	}
	job->run_deadline =
		jiffies + msecs_to_jiffies(job->queue->timeout_ms);
	spin_lock(&vdev->sched_lock);
	vdev->run_start = start;
	vdev->run_usage = job->queue->usage;
	spin_unlock(&vdev->sched_lock);
	trace_vtpu_job_start(job);

	for (iter = 0; !err && iter < job->repeat; iter++) {
		if (job->strides)
			vtpu_job_set_iteration(job,
					       (u64)job->first_iter + iter);
		err = vtpu_sched_run_stream(vdev, job, iter, &flops);
	}

	ns = ktime_get_ns() - start;
	atomic64_add(flops, &vdev->stats.flops);

	/* with run_usage cleared, so that vtpu_sched_busy_ns() counts once */
	spin_lock(&vdev->sched_lock);
	atomic64_add(ns, &vdev->stats.busy_ns);
	atomic64_add(ns, &job->queue->usage->busy_ns);
	vdev->run_usage = NULL;
	job->queue->running = NULL;
	spin_unlock(&vdev->sched_lock);
	vtpu_job_complete(job, err);
}

/**
 * vtpu_sched_busy_ns() - run time of jobs so far, the running one's included
 * @vdev: the device
 * @usage: a client's usage, or NULL for the whole device's
 *
 * A job's time is added when it ends; a job running for seconds would
 * make the busy time (sysfs busy_ns, fdinfo drm-engine-compute) stand
 * still, then jump by seconds, and a tool sampling it (vtpu-smi --watch)
 * show an idle device, then one busy 200% of an interval. Adding the
 * running job's time so far keeps it growing with wall time, and
 * monotonic: the job's end adds at least what was counted.
 *
 * Return: nanoseconds.
 */
u64 vtpu_sched_busy_ns(struct vtpu_device *vdev, struct vtpu_usage *usage)
{
	u64 ns;

	spin_lock(&vdev->sched_lock);
	ns = atomic64_read(usage ? &usage->busy_ns : &vdev->stats.busy_ns);
	if (vdev->run_usage && (!usage || usage == vdev->run_usage))
		ns += ktime_get_ns() - vdev->run_start;
	spin_unlock(&vdev->sched_lock);
	return ns;
}

static int vtpu_dispatcher_fn(void *data)
{
	struct vtpu_device *vdev = data;
	struct vtpu_kjob *job;
	bool waiting;
	int kicks;

	while (!kthread_should_stop()) {
		waiting = false;
		kicks = atomic_read(&vdev->kicks);
		job = vtpu_sched_pick(vdev, &waiting);
		if (job) {
			vtpu_sched_run_job(vdev, job);
			continue;
		}
		/*
		 * A kick since the pick makes the wait return at once. With a
		 * job waiting on an in-fence, look again now and then for its
		 * watchdog.
		 */
		wait_event_interruptible_timeout(vdev->sched_wq,
			kthread_should_stop() ||
			atomic_read(&vdev->kicks) != kicks,
			waiting ? HZ / 20 : MAX_SCHEDULE_TIMEOUT);
	}
	return 0;
}

static int vtpu_worker_fn(void *data)
{
	struct vtpu_worker *w = data;
	struct vtpu_device *vdev = w->vdev;

	while (!kthread_should_stop()) {
		wait_event_interruptible(vdev->work_wq,
					 kthread_should_stop() ||
					 vtpu_exec_has_tiles(&vdev->exec));
		vtpu_exec_tiles(vdev, w->scratch, true);
	}
	return 0;
}

static void *vtpu_scratch_alloc(void)
{
	/* zeroed, as the engine wants it (vtpu_engine.h) */
	return kvzalloc(vtpu_engine_scratch_size(), GFP_KERNEL);
}

int vtpu_sched_init(struct vtpu_device *vdev)
{
	unsigned int cores = vtpu_param_cores ?: num_online_cpus();
	struct vtpu_worker *w;
	unsigned int i;
	int ret;

	INIT_LIST_HEAD(&vdev->queues);
	spin_lock_init(&vdev->sched_lock);
	init_waitqueue_head(&vdev->sched_wq);
	init_waitqueue_head(&vdev->work_wq);
	spin_lock_init(&vdev->exec.lock);
	init_completion(&vdev->exec.done);

	vdev->group = kvzalloc(sizeof(*vdev->group), GFP_KERNEL);
	if (!vdev->group)
		return -ENOMEM;
	vdev->dispatcher_scratch = vtpu_scratch_alloc();
	if (!vdev->dispatcher_scratch) {
		kvfree(vdev->group);
		return -ENOMEM;
	}
	/* the dispatcher is one of the cores */
	vdev->nworkers = cores - 1;
	vdev->workers = kcalloc(vdev->nworkers + 1, sizeof(*vdev->workers),
				GFP_KERNEL);
	if (!vdev->workers) {
		ret = -ENOMEM;
		goto err_free_scratch;
	}
	for (i = 0; i < vdev->nworkers; i++) {
		w = &vdev->workers[i];
		w->vdev = vdev;
		w->id = i + 1;
		w->scratch = vtpu_scratch_alloc();
		if (!w->scratch) {
			ret = -ENOMEM;
			goto err_stop_workers;
		}
		w->task = kthread_run(vtpu_worker_fn, w, "vtpu%u-w%u",
				      vdev->index, w->id);
		if (IS_ERR(w->task)) {
			ret = PTR_ERR(w->task);
			kvfree(w->scratch);
			goto err_stop_workers;
		}
	}
	vdev->dispatcher = kthread_run(vtpu_dispatcher_fn, vdev, "vtpu%u-sched",
				       vdev->index);
	if (IS_ERR(vdev->dispatcher)) {
		ret = PTR_ERR(vdev->dispatcher);
		goto err_stop_workers;
	}
	return 0;

err_stop_workers:
	while (i--) {
		kthread_stop(vdev->workers[i].task);
		kvfree(vdev->workers[i].scratch);
	}
	kfree(vdev->workers);
err_free_scratch:
	kvfree(vdev->dispatcher_scratch);
	kvfree(vdev->group);
	return ret;
}

/* No client is left (the module is pinned while a file is open). */
void vtpu_sched_fini(struct vtpu_device *vdev)
{
	unsigned int i;

	kthread_stop(vdev->dispatcher);
	for (i = 0; i < vdev->nworkers; i++) {
		kthread_stop(vdev->workers[i].task);
		kvfree(vdev->workers[i].scratch);
	}
	kfree(vdev->workers);
	kvfree(vdev->dispatcher_scratch);
	kvfree(vdev->group);
	WARN_ON(!list_empty(&vdev->queues));
}
