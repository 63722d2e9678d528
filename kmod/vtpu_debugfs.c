// SPDX-License-Identifier: GPL-2.0-only
/*
 * debugfs: /sys/kernel/debug/vtpu/vtpuN/clients lists every open file of
 * the device with its buffers and queues (pending jobs, the running one,
 * the last seqno), for looking inside a device while it works.
 */
#include <linux/debugfs.h>
#include <linux/seq_file.h>

#include "vtpu_drv.h"

static struct dentry *vtpu_debugfs_root;

static void vtpu_debugfs_show_file(struct seq_file *m, struct vtpu_file *vfile)
{
	struct vtpu_device *vdev = vfile->vdev;
	unsigned long id, nbos;
	struct vtpu_queue *q;
	struct vtpu_kjob *job;
	u64 bytes, shared;
	u32 pending;

	vtpu_file_bo_usage(vfile, &nbos, &bytes, &shared);
	seq_printf(m, "client pid %d (%s): %lu buffers, %llu bytes\n",
		   vfile->pid, vfile->comm, nbos, bytes);

	xa_lock(&vfile->queues);
	xa_for_each(&vfile->queues, id, q) {
		pending = 0;
		spin_lock(&vdev->sched_lock);
		list_for_each_entry(job, &q->pending, node)
			pending++;
		seq_printf(m,
			   "  queue %u: priority %u, timeout %u ms, last seqno %llu, %u pending, running %llu\n",
			   q->id, q->priority, q->timeout_ms,
			   READ_ONCE(q->last_seqno), pending,
			   q->running ? q->running->seqno : 0);
		spin_unlock(&vdev->sched_lock);
	}
	xa_unlock(&vfile->queues);
}

static int vtpu_debugfs_clients_show(struct seq_file *m, void *unused)
{
	struct vtpu_device *vdev = m->private;
	struct vtpu_file *vfile;

	mutex_lock(&vdev->files_lock);
	list_for_each_entry(vfile, &vdev->files, node)
		vtpu_debugfs_show_file(m, vfile);
	mutex_unlock(&vdev->files_lock);
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(vtpu_debugfs_clients);

void vtpu_debugfs_init(struct vtpu_device *vdev)
{
	char name[16];

	if (!vtpu_debugfs_root)
		vtpu_debugfs_root = debugfs_create_dir("vtpu", NULL);
	snprintf(name, sizeof(name), "vtpu%u", vdev->index);
	vdev->debugfs = debugfs_create_dir(name, vtpu_debugfs_root);
	debugfs_create_file("clients", 0444, vdev->debugfs, vdev,
			    &vtpu_debugfs_clients_fops);
}

void vtpu_debugfs_fini(struct vtpu_device *vdev)
{
	debugfs_remove_recursive(vdev->debugfs);
}

void vtpu_debugfs_root_fini(void)
{
	debugfs_remove_recursive(vtpu_debugfs_root);
	vtpu_debugfs_root = NULL;
}
