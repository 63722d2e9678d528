// SPDX-License-Identifier: GPL-2.0-only
/*
 * vtpu: a virtual TPU. Module parameters, the /dev/vtpuN character
 * devices under the "vtpu" class, open/release/mmap, the ioctl table and
 * sysfs.
 *
 * Device lifetime follows vgem: everything a device needs (its workers,
 * its dispatcher) is set up before its node appears, and torn down in
 * exact reverse order after the node is gone. The cdev's owner pins the
 * module while any file is open, so rmmod is refused until the last
 * client (and the last fence it exported) is gone.
 */
#include <linux/device.h>
#include <linux/file.h>
#include <linux/fs.h>
#include <linux/module.h>
#include <linux/seq_file.h>
#include <linux/slab.h>
#include <linux/uaccess.h>

#include "vtpu_compat.h"
#include "vtpu_drv.h"

static unsigned int vtpu_param_devices = 1;
module_param_named(devices, vtpu_param_devices, uint, 0444);
MODULE_PARM_DESC(devices, "Number of /dev/vtpuN devices (1-16, default 1)");

unsigned int vtpu_param_cores;
module_param_named(cores, vtpu_param_cores, uint, 0444);
MODULE_PARM_DESC(cores,
		 "Matrix worker threads per device (0 = online CPUs, max 64)");

static char *vtpu_param_simd = "auto";
module_param_named(simd, vtpu_param_simd, charp, 0444);
MODULE_PARM_DESC(simd, "SIMD level: auto, scalar, avx2 or avx512");

unsigned long vtpu_param_mem_cap_mb = 1024;
module_param_named(mem_cap_mb, vtpu_param_mem_cap_mb, ulong, 0444);
MODULE_PARM_DESC(mem_cap_mb, "Buffer memory per device, MiB (default 1024)");

unsigned int vtpu_param_job_timeout_ms = 30000;
module_param_named(job_timeout_ms, vtpu_param_job_timeout_ms, uint, 0444);
MODULE_PARM_DESC(job_timeout_ms,
		 "Watchdog: longest a job may run, ms; also the most a queue may ask");

unsigned int vtpu_param_in_fence_timeout_ms;
module_param_named(in_fence_timeout_ms, vtpu_param_in_fence_timeout_ms, uint,
		   0444);
MODULE_PARM_DESC(in_fence_timeout_ms,
		 "Longest a job waits for its in-fence, ms (0 = no limit, default)");

unsigned int vtpu_param_client_jobs = 1024;
module_param_named(client_jobs, vtpu_param_client_jobs, uint, 0444);
MODULE_PARM_DESC(client_jobs,
		 "Jobs one open file may have queued or running (default 1024)");

unsigned int vtpu_param_client_job_mb = 64;
module_param_named(client_job_mb, vtpu_param_client_job_mb, uint, 0444);
MODULE_PARM_DESC(client_job_mb,
		 "Kernel memory one open file's jobs may pin, MiB (default 64)");


static dev_t vtpu_devt;
static struct class *vtpu_class;
static struct vtpu_device *vtpu_devices[VTPU_MAX_DEVICES];

/* ---- GET_PARAM ----------------------------------------------------------- */

int vtpu_get_param(struct vtpu_file *vfile, void *data,
		   struct vtpu_ioctl_undo *undo)
{
	struct vtpu_device *vdev = vfile->vdev;
	struct vtpu_get_param *args = data;
	u32 op;

	if (args->pad)
		return -EINVAL;
	switch (args->param) {
	case VTPU_PARAM_API_VERSION:
		args->value = VTPU_API_VERSION;
		break;
	case VTPU_PARAM_DEVICE_INDEX:
		args->value = vdev->index;
		break;
	case VTPU_PARAM_SIMD_LEVEL:
		args->value = vdev->simd;
		break;
	case VTPU_PARAM_NUM_CORES:
		args->value = vdev->nworkers + 1;
		break;
	case VTPU_PARAM_MEM_CAP:
	case VTPU_PARAM_MAX_BO_SIZE:
		args->value = vdev->mem_cap;
		break;
	case VTPU_PARAM_MEM_USED:
		args->value = atomic64_read(&vdev->mem_used);
		break;
	case VTPU_PARAM_JOB_TIMEOUT_MS:
		args->value = vtpu_param_job_timeout_ms;
		break;
	case VTPU_PARAM_MAX_QUEUES:
		args->value = VTPU_MAX_QUEUES;
		break;
	case VTPU_PARAM_OPCODES:
		/* the op table's opcodes: the numbering may have gaps */
		args->value = 0;
		for (op = 0; op < VTPU_OP_COUNT && op < 64; op++)
			if (vtpu_engine_op_desc(op))
				args->value |= BIT_ULL(op);
		break;
	case VTPU_PARAM_MAX_CMDS_SIZE:
		args->value = VTPU_MAX_CMDS_SIZE;
		break;
	case VTPU_PARAM_MAX_HANDLES:
		args->value = VTPU_MAX_HANDLES;
		break;
	case VTPU_PARAM_MAX_REPEAT:
		args->value = VTPU_MAX_REPEAT;
		break;
	case VTPU_PARAM_CLIENT_JOBS:
		args->value = vtpu_param_client_jobs;
		break;
	case VTPU_PARAM_CLIENT_JOB_BYTES:
		args->value = (u64)vtpu_param_client_job_mb << 20;
		break;
	case VTPU_PARAM_IN_FENCE_TIMEOUT_MS:
		args->value = vtpu_param_in_fence_timeout_ms;
		break;
	case VTPU_PARAM_DRIVER_VERSION:
		args->value = VTPU_VERSION_CODE(VTPU_VERSION_MAJOR,
						VTPU_VERSION_MINOR,
						VTPU_VERSION_PATCH);
		break;
	case VTPU_PARAM_KERNEL_VERSION:
		args->value = VTPU_BUILT_FOR_KERNEL;
		break;
	default:
		return -EINVAL;
	}
	return 0;
}

/* ---- ioctl --------------------------------------------------------------- */

/**
 * struct vtpu_ioctl_desc - one ioctl
 * @cmd: its number, which encodes today's struct size
 * @min_size: the first version's struct size; shorter is -EINVAL
 * @func: the handler, on a kernel copy of the struct; what it did that
 *        must not outlive a failed copy back goes in its undo argument
 * @out_on_error: copy the struct back even when @func fails (SUBMIT's
 *                error details, WAIT's PENDING status)
 */
struct vtpu_ioctl_desc {
	unsigned int cmd;
	unsigned int min_size;
	int (*func)(struct vtpu_file *vfile, void *data,
		    struct vtpu_ioctl_undo *undo);
	bool out_on_error;
};

#define VTPU_IOCTL_SIZED(_name, _func, _out_on_error, _min_size)              \
	[_IOC_NR(VTPU_IOCTL_##_name)] = {                                      \
		.cmd = VTPU_IOCTL_##_name,                                     \
		.min_size = _min_size,                                         \
		.func = _func,                                                 \
		.out_on_error = _out_on_error,                                 \
	}

/* An ioctl whose struct has not grown since its first version. */
#define VTPU_IOCTL(_name, _func, _out_on_error)                               \
	VTPU_IOCTL_SIZED(_name, _func, _out_on_error,                          \
			 _IOC_SIZE(VTPU_IOCTL_##_name))

static const struct vtpu_ioctl_desc vtpu_ioctls[] = {
	VTPU_IOCTL(GET_PARAM, vtpu_get_param, false),
	VTPU_IOCTL(BO_CREATE, vtpu_bo_create_ioctl, false),
	VTPU_IOCTL(BO_INFO, vtpu_bo_info_ioctl, false),
	VTPU_IOCTL(BO_CLOSE, vtpu_bo_close_ioctl, false),
	/* in_fence_timeout_ms and pad came after the first version */
	VTPU_IOCTL_SIZED(QUEUE_CREATE, vtpu_queue_create_ioctl, false,
			 offsetofend(struct vtpu_queue_create, timeout_ms)),
	VTPU_IOCTL(QUEUE_DESTROY, vtpu_queue_destroy_ioctl, false),
	/* repeat, first_iter and strides_ptr came after the first version */
	VTPU_IOCTL_SIZED(SUBMIT, vtpu_submit_ioctl, true,
			 offsetofend(struct vtpu_submit, error_reason)),
	VTPU_IOCTL(WAIT, vtpu_wait_ioctl, true),
	VTPU_IOCTL(BO_EXPORT, vtpu_bo_export_ioctl, false),
	VTPU_IOCTL(BO_IMPORT, vtpu_bo_import_ioctl, false),
};

union vtpu_ioctl_data {
	struct vtpu_get_param get_param;
	struct vtpu_bo_create bo_create;
	struct vtpu_bo_info bo_info;
	struct vtpu_bo_close bo_close;
	struct vtpu_queue_create queue_create;
	struct vtpu_queue_destroy queue_destroy;
	struct vtpu_submit submit;
	struct vtpu_wait wait;
	struct vtpu_bo_export bo_export;
	struct vtpu_bo_import bo_import;
};

/*
 * After a handler succeeded: the struct was copied back (@copied), or not.
 * Install the fd, queue the job; or take back what the caller cannot see.
 */
static void vtpu_ioctl_finish(struct vtpu_file *vfile,
			      struct vtpu_ioctl_undo *undo, bool copied)
{
	if (undo->file) {
		if (copied) {
			fd_install(undo->fd, undo->file);
		} else {
			fput(undo->file);
			put_unused_fd(undo->fd);
		}
	}
	if (undo->job || undo->queue)
		vtpu_job_finish(vfile, undo, copied);
	if (!copied)
		vtpu_bo_undo(vfile, undo);
}

/*
 * Structs are versioned by size (the size field of the ioctl number): a
 * shorter one than the first version is refused, a longer one must have
 * only zeros past what this kernel knows (copy_struct_from_user(): -E2BIG),
 * and only as many bytes as user space passed are copied back. A handler
 * whose struct cannot be copied back leaves nothing behind (see struct
 * vtpu_ioctl_undo).
 */
static long vtpu_ioctl(struct file *filp, unsigned int cmd, unsigned long arg)
{
	struct vtpu_file *vfile = filp->private_data;
	void __user *uarg = (void __user *)arg;
	const struct vtpu_ioctl_desc *desc;
	struct vtpu_ioctl_undo undo = { .fd = -1 };
	union vtpu_ioctl_data data;
	bool copied;
	unsigned int nr = _IOC_NR(cmd);
	size_t usize = _IOC_SIZE(cmd);
	size_t ksize;
	int ret;

	if (_IOC_TYPE(cmd) != VTPU_IOCTL_BASE || nr >= ARRAY_SIZE(vtpu_ioctls))
		return -ENOTTY;
	desc = &vtpu_ioctls[nr];
	if (!desc->func || _IOC_DIR(cmd) != _IOC_DIR(desc->cmd))
		return -ENOTTY;
	if (usize < desc->min_size)
		return -EINVAL;
	ksize = _IOC_SIZE(desc->cmd);
	BUILD_BUG_ON(sizeof(data) > 128);

	ret = copy_struct_from_user(&data, ksize, uarg, usize);
	if (ret)
		return ret;

	dev_dbg(vfile->vdev->dev, "ioctl %u by %d\n", nr,
		 task_pid_nr(current));
	ret = desc->func(vfile, &data, &undo);

	copied = !(_IOC_DIR(cmd) & _IOC_READ) || (ret && !desc->out_on_error) ||
		 !copy_to_user(uarg, &data, min(usize, ksize));
	if (!ret)
		vtpu_ioctl_finish(vfile, &undo, copied);
	return copied ? ret : -EFAULT;
}

/* ---- file operations ----------------------------------------------------- */

/* fdinfo's drm-client-id: never reused while the module is loaded */
static atomic64_t vtpu_client_ids = ATOMIC64_INIT(0);

static int vtpu_open(struct inode *inode, struct file *filp)
{
	struct vtpu_device *vdev =
		container_of(inode->i_cdev, struct vtpu_device, cdev);
	struct vtpu_file *vfile;

	vfile = kzalloc(sizeof(*vfile), GFP_KERNEL_ACCOUNT);
	if (!vfile)
		return -ENOMEM;
	vfile->usage = vtpu_usage_create();
	if (!vfile->usage) {
		kfree(vfile);
		return -ENOMEM;
	}
	vfile->vdev = vdev;
	vfile->client_id = atomic64_inc_return(&vtpu_client_ids);
	vfile->pid = task_tgid_nr(current);
	get_task_comm(vfile->comm, current);
	xa_init_flags(&vfile->bos, XA_FLAGS_ALLOC1);
	xa_init_flags(&vfile->queues, XA_FLAGS_ALLOC1);
	mutex_init(&vfile->import_lock);
	filp->private_data = vfile;
	atomic_inc(&vdev->clients);
	mutex_lock(&vdev->files_lock);
	list_add_tail(&vfile->node, &vdev->files);
	mutex_unlock(&vdev->files_lock);
	return 0;
}

/* Queues first: their jobs are cancelled before the handles go. */
static int vtpu_release(struct inode *inode, struct file *filp)
{
	struct vtpu_file *vfile = filp->private_data;
	struct vtpu_device *vdev = vfile->vdev;

	mutex_lock(&vdev->files_lock);
	list_del(&vfile->node);
	mutex_unlock(&vdev->files_lock);
	vtpu_file_queues_fini(vfile);
	vtpu_file_bos_fini(vfile);
	vtpu_usage_put(vfile->usage);
	atomic_dec(&vfile->vdev->clients);
	mutex_destroy(&vfile->import_lock);
	kfree(vfile);
	return 0;
}

/*
 * /proc/PID/fdinfo/FD: the client's usage in the keys of the kernel's DRM
 * usage-stats document (Documentation/gpu/drm-usage-stats.rst), so tools
 * that read those (gputop, nvtop, vtpu-smi) show vtpu clients. One engine,
 * "compute": the dispatcher runs one job at a time, so its capacity is 1
 * and busy time is the wall time of the client's jobs. One memory region,
 * "system": buffers are pages of system memory.
 */
static void vtpu_show_fdinfo(struct seq_file *m, struct file *filp)
{
	struct vtpu_file *vfile = filp->private_data;
	unsigned long nbos;
	u64 total, shared;

	vtpu_file_bo_usage(vfile, &nbos, &total, &shared);
	seq_puts(m, "drm-driver:\tvtpu\n");
	seq_printf(m, "drm-client-id:\t%llu\n", vfile->client_id);
	seq_printf(m, "drm-engine-compute:\t%llu ns\n",
		   vtpu_sched_busy_ns(vfile->vdev, vfile->usage));
	seq_puts(m, "drm-engine-capacity-compute:\t1\n");
	seq_printf(m, "drm-total-system:\t%llu KiB\n", total >> 10);
	seq_printf(m, "drm-shared-system:\t%llu KiB\n", shared >> 10);
	seq_printf(m, "drm-resident-system:\t%llu KiB\n", total >> 10);
	/* the older name of drm-resident-, which tools still read */
	seq_printf(m, "drm-memory-system:\t%llu KiB\n", total >> 10);
	seq_printf(m, "vtpu-device:\tvtpu%u\n", vfile->vdev->index);
	seq_printf(m, "vtpu-buffers:\t%lu\n", nbos);
	seq_printf(m, "vtpu-jobs-active:\t%d\n",
		   atomic_read(&vfile->usage->jobs));
}

static int vtpu_mmap(struct file *filp, struct vm_area_struct *vma)
{
	return vtpu_bo_mmap(filp->private_data, vma);
}

static const struct file_operations vtpu_fops = {
	.owner = THIS_MODULE,
	.open = vtpu_open,
	.release = vtpu_release,
	.unlocked_ioctl = vtpu_ioctl,
	.compat_ioctl = compat_ptr_ioctl,
	.mmap = vtpu_mmap,
	.show_fdinfo = vtpu_show_fdinfo,
	.llseek = noop_llseek,
};

/* ---- sysfs --------------------------------------------------------------- */

static struct vtpu_device *to_vtpu(struct device *dev)
{
	return dev_get_drvdata(dev);
}

static ssize_t simd_show(struct device *dev, struct device_attribute *attr,
			 char *buf)
{
	return sysfs_emit(buf, "%s\n", vtpu_engine_simd_name(to_vtpu(dev)->simd));
}
static DEVICE_ATTR_RO(simd);

static ssize_t cores_show(struct device *dev, struct device_attribute *attr,
			  char *buf)
{
	return sysfs_emit(buf, "%u\n", to_vtpu(dev)->nworkers + 1);
}
static DEVICE_ATTR_RO(cores);

static ssize_t mem_cap_show(struct device *dev, struct device_attribute *attr,
			    char *buf)
{
	return sysfs_emit(buf, "%llu\n", to_vtpu(dev)->mem_cap);
}
static DEVICE_ATTR_RO(mem_cap);

static ssize_t mem_used_show(struct device *dev, struct device_attribute *attr,
			     char *buf)
{
	return sysfs_emit(buf, "%lld\n",
			  (s64)atomic64_read(&to_vtpu(dev)->mem_used));
}
static DEVICE_ATTR_RO(mem_used);

static ssize_t clients_show(struct device *dev, struct device_attribute *attr,
			    char *buf)
{
	return sysfs_emit(buf, "%d\n", atomic_read(&to_vtpu(dev)->clients));
}
static DEVICE_ATTR_RO(clients);

static ssize_t job_timeout_ms_show(struct device *dev,
				   struct device_attribute *attr, char *buf)
{
	return sysfs_emit(buf, "%u\n", vtpu_param_job_timeout_ms);
}
static DEVICE_ATTR_RO(job_timeout_ms);

#define VTPU_STAT_ATTR(_name)                                                  \
	static ssize_t _name##_show(struct device *dev,                        \
				    struct device_attribute *attr, char *buf)  \
	{                                                                      \
		return sysfs_emit(buf, "%lld\n",                               \
				  (s64)atomic64_read(&to_vtpu(dev)->stats._name)); \
	}                                                                      \
	static DEVICE_ATTR_RO(_name)

VTPU_STAT_ATTR(jobs_submitted);
VTPU_STAT_ATTR(jobs_completed);
VTPU_STAT_ATTR(jobs_failed);
VTPU_STAT_ATTR(jobs_timedout);
VTPU_STAT_ATTR(jobs_cancelled);
VTPU_STAT_ATTR(flops);

/* the running job's time so far included: see vtpu_sched_busy_ns() */
static ssize_t busy_ns_show(struct device *dev, struct device_attribute *attr,
			    char *buf)
{
	return sysfs_emit(buf, "%llu\n",
			  vtpu_sched_busy_ns(to_vtpu(dev), NULL));
}
static DEVICE_ATTR_RO(busy_ns);

static struct attribute *vtpu_attrs[] = {
	&dev_attr_simd.attr,
	&dev_attr_cores.attr,
	&dev_attr_mem_cap.attr,
	&dev_attr_mem_used.attr,
	&dev_attr_clients.attr,
	&dev_attr_job_timeout_ms.attr,
	&dev_attr_jobs_submitted.attr,
	&dev_attr_jobs_completed.attr,
	&dev_attr_jobs_failed.attr,
	&dev_attr_jobs_timedout.attr,
	&dev_attr_jobs_cancelled.attr,
	&dev_attr_flops.attr,
	&dev_attr_busy_ns.attr,
	NULL,
};
ATTRIBUTE_GROUPS(vtpu);

/* ---- devices ------------------------------------------------------------- */

static struct vtpu_device *vtpu_device_create(unsigned int index, u32 simd)
{
	struct vtpu_device *vdev;
	int ret;

	vdev = kzalloc(sizeof(*vdev), GFP_KERNEL);
	if (!vdev)
		return ERR_PTR(-ENOMEM);
	vdev->index = index;
	vdev->simd = simd;
	vdev->mem_cap = (u64)vtpu_param_mem_cap_mb << 20;
	atomic64_set(&vdev->mem_used, 0);
	mutex_init(&vdev->files_lock);
	INIT_LIST_HEAD(&vdev->files);

	ret = vtpu_sched_init(vdev);
	if (ret)
		goto err_free;

	cdev_init(&vdev->cdev, &vtpu_fops);
	vdev->cdev.owner = THIS_MODULE;
	vtpu_debugfs_init(vdev);
	ret = cdev_add(&vdev->cdev, MKDEV(MAJOR(vtpu_devt), index), 1);
	if (ret)
		goto err_debugfs_fini;

	/* last: the node appears only once the device can serve it */
	vdev->dev = device_create_with_groups(vtpu_class, NULL,
					      MKDEV(MAJOR(vtpu_devt), index),
					      vdev, vtpu_groups, "vtpu%u",
					      index);
	if (IS_ERR(vdev->dev)) {
		ret = PTR_ERR(vdev->dev);
		goto err_cdev_del;
	}
	return vdev;

err_cdev_del:
	cdev_del(&vdev->cdev);
err_debugfs_fini:
	vtpu_debugfs_fini(vdev);
	vtpu_sched_fini(vdev);
err_free:
	kfree(vdev);
	return ERR_PTR(ret);
}

static void vtpu_device_destroy(struct vtpu_device *vdev)
{
	device_destroy(vtpu_class, MKDEV(MAJOR(vtpu_devt), vdev->index));
	cdev_del(&vdev->cdev);
	vtpu_debugfs_fini(vdev);
	vtpu_sched_fini(vdev);
	WARN_ON(atomic64_read(&vdev->mem_used));
	mutex_destroy(&vdev->files_lock);
	kfree(vdev);
}

static int vtpu_simd_parse(const char *s, u32 *simd)
{
	u32 best = vtpu_simd_best();
	int level;

	if (sysfs_streq(s, "auto")) {
		*simd = best;
		return 0;
	}
	for (level = VTPU_SIMD_SCALAR; level <= VTPU_SIMD_AVX512; level++) {
		if (!sysfs_streq(s, vtpu_engine_simd_name(level)))
			continue;
		if (level > best) {
			pr_err("vtpu: simd=%s: this CPU supports up to %s\n", s,
			       vtpu_engine_simd_name(best));
			return -EINVAL;
		}
		*simd = level;
		return 0;
	}
	pr_err("vtpu: simd=%s: use auto, scalar, avx2 or avx512\n", s);
	return -EINVAL;
}

static void vtpu_devices_destroy(void)
{
	unsigned int i;

	for (i = VTPU_MAX_DEVICES; i--;) {
		if (vtpu_devices[i])
			vtpu_device_destroy(vtpu_devices[i]);
		vtpu_devices[i] = NULL;
	}
}

static int __init vtpu_init(void)
{
	unsigned int i;
	u32 simd;
	int ret;

	if (vtpu_param_devices < 1 || vtpu_param_devices > VTPU_MAX_DEVICES) {
		pr_err("vtpu: devices=%u: must be 1..%u\n", vtpu_param_devices,
		       VTPU_MAX_DEVICES);
		return -EINVAL;
	}
	if (vtpu_param_cores > 64) {
		pr_err("vtpu: cores=%u: must be 0..64\n", vtpu_param_cores);
		return -EINVAL;
	}
	if (!vtpu_param_mem_cap_mb || vtpu_param_mem_cap_mb > (1UL << 20)) {
		pr_err("vtpu: mem_cap_mb=%lu: must be 1..1048576\n",
		       vtpu_param_mem_cap_mb);
		return -EINVAL;
	}
	if (!vtpu_param_job_timeout_ms) {
		pr_err("vtpu: job_timeout_ms must not be 0\n");
		return -EINVAL;
	}
	ret = vtpu_simd_parse(vtpu_param_simd, &simd);
	if (ret)
		return ret;

	ret = alloc_chrdev_region(&vtpu_devt, 0, vtpu_param_devices, "vtpu");
	if (ret)
		return ret;
	vtpu_class = vtpu_class_create("vtpu");
	if (IS_ERR(vtpu_class)) {
		ret = PTR_ERR(vtpu_class);
		goto err_unregister;
	}
	for (i = 0; i < vtpu_param_devices; i++) {
		vtpu_devices[i] = vtpu_device_create(i, simd);
		if (IS_ERR(vtpu_devices[i])) {
			ret = PTR_ERR(vtpu_devices[i]);
			vtpu_devices[i] = NULL;
			goto err_destroy_devices;
		}
	}
	pr_info("vtpu: version %s, %u device(s), %u worker(s) each, SIMD %s, mem_cap %lu MiB\n",
		VTPU_DRIVER_VERSION, vtpu_param_devices,
		vtpu_devices[0]->nworkers + 1, vtpu_engine_simd_name(simd),
		vtpu_param_mem_cap_mb);
	return 0;

err_destroy_devices:
	vtpu_devices_destroy();
	vtpu_debugfs_root_fini();
	class_destroy(vtpu_class);
err_unregister:
	unregister_chrdev_region(vtpu_devt, vtpu_param_devices);
	return ret;
}

static void __exit vtpu_exit(void)
{
	vtpu_devices_destroy();
	vtpu_debugfs_root_fini();
	class_destroy(vtpu_class);
	unregister_chrdev_region(vtpu_devt, vtpu_param_devices);
}

module_init(vtpu_init);
module_exit(vtpu_exit);

MODULE_DESCRIPTION("vtpu: a virtual TPU with in-kernel SIMD matrix workers");
MODULE_AUTHOR("The vtpu developers");
MODULE_LICENSE("GPL");
MODULE_VERSION(VTPU_DRIVER_VERSION);
VTPU_IMPORT_NS_DMA_BUF();
