/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * vtpu: a virtual TPU. Internal structures shared by the driver's files:
 *
 *   vtpu_drv.c    module parameters, /dev/vtpuN, open/release, ioctl table,
 *                 sysfs
 *   vtpu_bo.c     buffers: zeroed pages, mmap, per-file handles
 *   vtpu_job.c    queues, submit (validation, fences), wait, cancel
 *   vtpu_sched.c  the per-device dispatcher and matrix worker threads
 *   vtpu_debugfs.c  per-client state under /sys/kernel/debug/vtpu/
 *   vtpu_fpu.c    SIMD level detection; the one place that knows the CPU
 *   engine/       the compute, shared with user space (libvtpu)
 *
 * Lifetimes: a struct vtpu_file lives from open to release. Buffers and
 * queues are reference-counted; a job holds a reference to its queue and
 * to every buffer it names, so closing handles or the whole fd while a job
 * runs is safe. A fence holds a module reference until it is freed.
 *
 * Names: kernel objects carry a k (struct vtpu_kbo, struct vtpu_kjob) so
 * they never share a name with libvtpu's struct vtpu_bo and vtpu_job.
 */
#ifndef VTPU_DRV_H
#define VTPU_DRV_H

#include <linux/cdev.h>
#include <linux/dma-buf.h>
#include <linux/dma-resv.h>
#include <linux/iosys-map.h>
#include <linux/dma-fence.h>
#include <linux/kref.h>
#include <linux/list.h>
#include <linux/mutex.h>
#include <linux/sched.h>
#include <linux/spinlock.h>
#include <linux/wait.h>
#include <linux/xarray.h>
#include <linux/vtpu.h>

#include "vtpu_engine.h"

#define VTPU_DRIVER_VERSION VTPU_VERSION	/* kmod/Kbuild: from VERSION */
#define VTPU_MAX_DEVICES 16
#define VTPU_MAX_QUEUES 64		/* per open file */
#define VTPU_MAX_HANDLES VTPU_SUBMIT_MAX_HANDLES
#define VTPU_MAX_CMDS_SIZE VTPU_SUBMIT_MAX_CMDS_SIZE
#define VTPU_MAX_REPEAT VTPU_ENGINE_MAX_REPEAT /* iterations of one job */
#define VTPU_MAX_BO_HANDLE (1u << 20)
/* mmap offset of a buffer: its handle << VTPU_MMAP_SHIFT (1 TiB apart) */
#define VTPU_MMAP_SHIFT 40
#define VTPU_NUM_PRIO (VTPU_QUEUE_PRIORITY_HIGH + 1)

/* Module parameters (vtpu_drv.c); read-only once loaded. */
extern unsigned int vtpu_param_cores;
extern unsigned long vtpu_param_mem_cap_mb;
extern unsigned int vtpu_param_job_timeout_ms;
extern unsigned int vtpu_param_in_fence_timeout_ms;
extern unsigned int vtpu_param_client_jobs;
extern unsigned int vtpu_param_client_job_mb;

struct vtpu_kjob;

/**
 * struct vtpu_worker - one matrix worker thread and its scratch memory
 */
struct vtpu_worker {
	struct vtpu_device *vdev;
	struct task_struct *task;
	void *scratch;
	unsigned int id;
};

/**
 * struct vtpu_exec - the commands being executed, shared with the workers
 *
 * The dispatcher gathers a group of commands that do not depend on each
 * other (vtpu_engine_group_add()) and publishes it; the workers and the
 * dispatcher take its tiles one at a time, the dispatcher from the front
 * of those left and the workers from the end, so that a group's first
 * and last commands start side by side; the last tile to finish
 * completes @done.
 */
struct vtpu_exec {
	spinlock_t lock;		/* protects all fields below */
	const struct vtpu_engine_group *grp; /* NULL when idle */
	struct vtpu_kjob *job;
	u32 next_tile;			/* tiles not taken: [next, end) */
	u32 end_tile;
	u32 tiles_left;
	struct completion done;
};

struct vtpu_stats {
	atomic64_t jobs_submitted;
	atomic64_t jobs_completed;
	atomic64_t jobs_failed;
	atomic64_t jobs_timedout;
	atomic64_t jobs_cancelled;
	atomic64_t flops;
	atomic64_t busy_ns;
};

/**
 * struct vtpu_device - one /dev/vtpuN
 */
struct vtpu_device {
	struct device *dev;
	struct cdev cdev;
	unsigned int index;
	u32 simd;			/* enum vtpu_simd_level */
	u64 mem_cap;			/* bytes */
	atomic64_t mem_used;		/* bytes in live buffers */
	atomic_t clients;		/* open files */
	struct mutex files_lock;	/* protects files */
	struct list_head files;		/* struct vtpu_file, for debugfs */
	struct dentry *debugfs;

	spinlock_t sched_lock;		/* protects queues, queue->pending */
	struct list_head queues;	/* all queues, round-robin order */
	wait_queue_head_t sched_wq;	/* the dispatcher waits here */
	atomic_t kicks;			/* bumped by vtpu_sched_kick() */
	struct task_struct *dispatcher;
	void *dispatcher_scratch;
	struct vtpu_engine_group *group; /* the dispatcher's, see vtpu_exec */
	/* the running job's start and client, for busy time so far */
	u64 run_start;			/* ktime ns (sched_lock) */
	struct vtpu_usage *run_usage;	/* NULL: none running (sched_lock) */

	unsigned int nworkers;		/* helper threads (cores - 1) */
	struct vtpu_worker *workers;
	wait_queue_head_t work_wq;	/* workers wait here for tiles */
	struct vtpu_exec exec;

	struct vtpu_stats stats;
};

/**
 * struct vtpu_usage - what one client's jobs pin, against its limits
 *
 * Shared by the file and its queues, so that a job still running after
 * its file was released gives back what it pinned.
 */
struct vtpu_usage {
	struct kref ref;
	atomic_t jobs;			/* queued or running */
	atomic64_t bytes;		/* kernel memory they hold */
	atomic64_t busy_ns;		/* their run time, for fdinfo */
};

/**
 * struct vtpu_file - one open file description of a device
 */
struct vtpu_file {
	struct vtpu_device *vdev;
	struct vtpu_usage *usage;	/* holds a reference */
	u64 client_id;			/* unique while the module lives */
	struct list_head node;		/* in vdev->files */
	pid_t pid;			/* of the opener, for debugfs */
	char comm[TASK_COMM_LEN];
	struct xarray bos;		/* handle -> struct vtpu_kbo */
	struct mutex import_lock;	/* one handle per imported buffer */
	struct xarray queues;		/* id -> struct vtpu_queue */
};

/* vtpu_file.bos mark: the handle came from a read-only export */
#define VTPU_BO_MARK_RO XA_MARK_1

/**
 * struct vtpu_kbo - a buffer: zeroed pages, mapped in the kernel with vmap
 */
struct vtpu_kbo {
	struct kref ref;
	struct vtpu_device *vdev;
	size_t size;			/* bytes, page multiple */
	unsigned long npages;
	struct page **pages;		/* NULL when @foreign */
	void *vaddr;			/* what the engine reads and writes */
	struct mutex dmabuf_lock;	/* protects dmabuf */
	/* its exports, [0] read-only and [1] read-write; cleared on release */
	struct dma_buf *dmabuf[2];
	/* the fences of jobs that use it, for implicit sync; its exports' */
	struct dma_resv resv;
	bool shared;			/* ever exported (dmabuf_lock) */
	/* another driver's buffer: its dma-buf (a reference) and vmap */
	struct dma_buf *foreign;
	struct iosys_map foreign_map;
};

/* The reservation object implicit sync uses for @bo, or NULL if none. */
static inline struct dma_resv *vtpu_bo_resv(struct vtpu_kbo *bo)
{
	if (bo->foreign)
		return bo->foreign->resv;
	return READ_ONCE(bo->shared) ? &bo->resv : NULL;
}

/**
 * struct vtpu_fence - a job's completion, exported as a sync_file
 */
struct vtpu_fence {
	struct dma_fence base;
	spinlock_t lock;		/* the dma_fence lock; lives with it */
	char timeline[24];		/* "vtpuD-qQ": it may outlive the queue */
};

/**
 * struct vtpu_queue - an ordered stream of jobs
 */
struct vtpu_queue {
	struct kref ref;
	struct vtpu_device *vdev;
	u32 id;
	u32 priority;
	u32 timeout_ms;			/* watchdog for this queue's jobs */
	u32 in_fence_timeout_ms;	/* 0: wait for in-fences forever */
	struct vtpu_usage *usage;	/* its client's; holds a reference */
	u64 fence_context;
	struct list_head node;		/* in vdev->queues (sched_lock) */
	struct list_head pending;	/* jobs not yet started (sched_lock) */
	struct vtpu_kjob *running;	/* (sched_lock) */
	bool dead;			/* destroyed: set under lock and sched_lock */

	/*
	 * Protects the fields below; held across a kill, so that a submit
	 * racing with it cancels its job after the killed ones.
	 */
	struct mutex lock;
	u64 last_seqno;
	struct dma_fence *history[VTPU_QUEUE_HISTORY]; /* by seqno % size */
};

/**
 * struct vtpu_kjob - one submission
 */
struct vtpu_kjob {
	struct kref ref;
	struct vtpu_queue *queue;	/* holds a reference */
	u64 pinned;			/* charged to queue->usage */
	struct list_head node;		/* in queue->pending (sched_lock) */
	bool held;			/* not to run yet (sched_lock) */
	u64 seqno;
	struct vtpu_fence *fence;	/* holds a reference */

	void *cmds;
	u32 cmds_size;
	u32 nbufs;
	struct vtpu_kbo **bos;		/* each holds a reference */
	struct vtpu_engine_buf *bufs;	/* what the engine sees this iteration */
	u32 repeat;			/* iterations, >= 1 */
	u32 first_iter;			/* number of the first iteration */
	u64 *strides;			/* per buffer, bytes; NULL: all 0 */
	bool *written;			/* per buffer; NULL: none shared */

	struct dma_fence *in_fence;	/* NULL once satisfied */
	struct dma_fence_cb in_cb;
	bool in_fence_done;		/* set by the callback (sched_lock) */
	int in_fence_error;
	bool wait_forever;		/* no in-fence watchdog */
	unsigned long wait_deadline;	/* jiffies: in-fence watchdog */
	unsigned long run_deadline;	/* jiffies: running watchdog */

	int abort;			/* -errno: stop at the next tile */
};

/**
 * struct vtpu_implicit - the reservation objects of a job's shared buffers,
 *	locked from before its fence exists until it is in them (vtpu_sync.c)
 * @ctx: the ww_mutex acquire context they are locked in
 * @n: how many; 0 when the job uses no shared buffer
 * @resv: the objects
 * @write: per object, whether the job writes its buffer
 */
struct vtpu_implicit {
	struct ww_acquire_ctx ctx;
	u32 n;
	struct dma_resv **resv;
	bool *write;
};

int vtpu_implicit_begin(struct vtpu_kjob *job, struct vtpu_implicit *imp,
			const bool *written);
void vtpu_implicit_publish(struct vtpu_kjob *job, struct vtpu_implicit *imp);
void vtpu_implicit_end(struct vtpu_implicit *imp);

/**
 * struct vtpu_ioctl_undo - what an ioctl did that must not outlive a
 * failed copy of its struct back to user space
 * @file: a file to install as @fd once the struct is copied back (put,
 *        with @fd, if it is not)
 * @fd: reserved with get_unused_fd_flags()
 * @bo: a new handle @handle of this buffer, closed if the copy fails
 * @handle: see @bo
 * @ro_cleared: @handle was read-only before: made so again
 * @queue: a new queue @queue_id, destroyed if the copy fails
 * @queue_id: see @queue
 * @job: an armed job, queued once the struct is copied back (cancelled,
 *       in order, if it is not)
 *
 * As the kernel's own ioctls do (put_user() before fd_install()), nothing
 * a caller cannot see is left behind when it sees -EFAULT.
 */
struct vtpu_ioctl_undo {
	struct file *file;
	int fd;
	struct vtpu_kbo *bo;
	u32 handle;
	bool ro_cleared;
	struct vtpu_queue *queue;
	u32 queue_id;
	struct vtpu_kjob *job;
};

/* vtpu_drv.c */
int vtpu_get_param(struct vtpu_file *vfile, void *data,
		   struct vtpu_ioctl_undo *undo);

/* vtpu_bo.c */
int vtpu_bo_create_ioctl(struct vtpu_file *vfile, void *data,
			 struct vtpu_ioctl_undo *undo);
int vtpu_bo_info_ioctl(struct vtpu_file *vfile, void *data,
		       struct vtpu_ioctl_undo *undo);
int vtpu_bo_close_ioctl(struct vtpu_file *vfile, void *data,
			struct vtpu_ioctl_undo *undo);
int vtpu_bo_export_ioctl(struct vtpu_file *vfile, void *data,
			 struct vtpu_ioctl_undo *undo);
int vtpu_bo_import_ioctl(struct vtpu_file *vfile, void *data,
			 struct vtpu_ioctl_undo *undo);
void vtpu_bo_undo(struct vtpu_file *vfile, struct vtpu_ioctl_undo *undo);
struct vtpu_kbo *vtpu_bo_lookup(struct vtpu_file *vfile, u32 handle);
struct vtpu_kbo *vtpu_bo_lookup_ro(struct vtpu_file *vfile, u32 handle,
				   bool *ro);
void vtpu_bo_put(struct vtpu_kbo *bo);
int vtpu_bo_mmap(struct vtpu_file *vfile, struct vm_area_struct *vma);
void vtpu_file_bos_fini(struct vtpu_file *vfile);
void vtpu_file_bo_usage(struct vtpu_file *vfile, unsigned long *nbos,
			u64 *total, u64 *shared);

/* vtpu_job.c */
int vtpu_queue_create_ioctl(struct vtpu_file *vfile, void *data,
			    struct vtpu_ioctl_undo *undo);
int vtpu_queue_destroy_ioctl(struct vtpu_file *vfile, void *data,
			     struct vtpu_ioctl_undo *undo);
int vtpu_submit_ioctl(struct vtpu_file *vfile, void *data,
		      struct vtpu_ioctl_undo *undo);
int vtpu_wait_ioctl(struct vtpu_file *vfile, void *data,
		    struct vtpu_ioctl_undo *undo);
void vtpu_job_finish(struct vtpu_file *vfile, struct vtpu_ioctl_undo *undo,
		     bool copied);
struct vtpu_usage *vtpu_usage_create(void);
void vtpu_usage_put(struct vtpu_usage *usage);
void vtpu_file_queues_fini(struct vtpu_file *vfile);
void vtpu_job_complete(struct vtpu_kjob *job, int error);
void vtpu_job_put(struct vtpu_kjob *job);

/* vtpu_sched.c */
int vtpu_sched_init(struct vtpu_device *vdev);
void vtpu_sched_fini(struct vtpu_device *vdev);
void vtpu_sched_kick(struct vtpu_device *vdev);
u64 vtpu_sched_busy_ns(struct vtpu_device *vdev, struct vtpu_usage *usage);

/* vtpu_debugfs.c */
void vtpu_debugfs_init(struct vtpu_device *vdev);
void vtpu_debugfs_fini(struct vtpu_device *vdev);
void vtpu_debugfs_root_fini(void);

/* vtpu_fpu.c */
u32 vtpu_simd_best(void);
u32 vtpu_fpu_begin(void);
void vtpu_fpu_end(u32 saved);

#endif /* VTPU_DRV_H */
