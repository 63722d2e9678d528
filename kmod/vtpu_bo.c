// SPDX-License-Identifier: GPL-2.0-only
/*
 * Buffers: page arrays mapped once into the kernel (vmap) for the engine
 * and, on request, into user space (all pages inserted at mmap time, so
 * training steps take no page faults; a page zapped later, by
 * MADV_DONTNEED say, faults back in). Pages are zeroed, charged to the
 * caller's memory cgroup, and counted against the device's mem_cap.
 *
 * A buffer can be exported as a dma-buf and imported by any vtpu device
 * (another open file, or another /dev/vtpuN): the importer gets a handle to
 * the same pages. A buffer has at most one dma-buf per mode (read-only,
 * read-write) at a time, each holding a reference on the buffer; a
 * read-only one gives its importers read-only handles. Both carry the
 * buffer's reservation object, where jobs that use an exported buffer put
 * their fences (implicit sync, vtpu_sync.c).
 *
 * Another driver's dma-buf (udmabuf, vgem, a GPU's) can be imported too:
 * the engine computes on it through the exporter's kernel mapping
 * (dma_buf_vmap()), so only a buffer the exporter maps into the kernel as
 * memory is accepted: one that cannot be mapped, or maps as I/O memory,
 * is refused with -EOPNOTSUPP. CPU access is begun at import and ended at
 * release (dma_buf_begin/end_cpu_access()), not around each job: those
 * wait for the fences in the buffer's reservation object, where the job's
 * own fence already is. Its memory is the exporter's: it does not count
 * against mem_cap.
 */
#include <linux/dma-buf.h>
#include <linux/dma-mapping.h>
#include <linux/fcntl.h>
#include <linux/mm.h>
#include <linux/pfn_t.h>
#include <linux/slab.h>
#include <linux/vmalloc.h>

#include "vtpu_compat.h"
#include "vtpu_drv.h"
#include "vtpu_trace.h"

static void vtpu_bo_free_pages(struct vtpu_kbo *bo, unsigned long n)
{
	while (n--)
		__free_page(bo->pages[n]);
	kvfree(bo->pages);
}

static struct vtpu_kbo *vtpu_bo_alloc(struct vtpu_device *vdev, u64 size)
{
	struct vtpu_kbo *bo;
	unsigned long i;
	u64 used;

	/* more than the machine has can only fail: say so before trying */
	if (size >> PAGE_SHIFT > totalram_pages())
		return ERR_PTR(-ENOMEM);

	used = atomic64_add_return(size, &vdev->mem_used);
	if (used > vdev->mem_cap) {
		atomic64_sub(size, &vdev->mem_used);
		dev_warn_ratelimited(vdev->dev,
				     "buffer of %llu bytes refused: %llu of mem_cap %llu bytes in use\n",
				     size, used - size, vdev->mem_cap);
		return ERR_PTR(-ENOSPC);
	}

	bo = kzalloc(sizeof(*bo), GFP_KERNEL_ACCOUNT);
	if (!bo)
		goto err_unaccount;
	kref_init(&bo->ref);
	mutex_init(&bo->dmabuf_lock);
	dma_resv_init(&bo->resv);
	bo->vdev = vdev;
	bo->size = size;
	bo->npages = size >> PAGE_SHIFT;
	/* NOWARN: kvmalloc() warns past INT_MAX bytes, a size users choose */
	bo->pages = kvcalloc(bo->npages, sizeof(*bo->pages),
			     GFP_KERNEL_ACCOUNT | __GFP_NOWARN);
	if (!bo->pages)
		goto err_free_bo;
	/* RETRY_MAYFAIL: a too-large request fails with -ENOMEM, never OOMs */
	for (i = 0; i < bo->npages; i++) {
		bo->pages[i] = alloc_page(GFP_KERNEL_ACCOUNT | __GFP_ZERO |
					  __GFP_RETRY_MAYFAIL | __GFP_NOWARN);
		if (!bo->pages[i])
			goto err_free_pages;
		cond_resched();
	}
	bo->vaddr = vmap(bo->pages, bo->npages, VM_MAP, PAGE_KERNEL);
	if (!bo->vaddr)
		goto err_free_pages;
	return bo;

err_free_pages:
	vtpu_bo_free_pages(bo, i);
err_free_bo:
	dma_resv_fini(&bo->resv);
	kfree(bo);
err_unaccount:
	atomic64_sub(size, &vdev->mem_used);
	return ERR_PTR(-ENOMEM);
}

static void vtpu_bo_release(struct kref *ref)
{
	struct vtpu_kbo *bo = container_of(ref, struct vtpu_kbo, ref);

	if (bo->foreign) {
		vtpu_dma_buf_vunmap(bo->foreign, &bo->foreign_map);
		dma_buf_end_cpu_access(bo->foreign, DMA_BIDIRECTIONAL);
		dma_buf_put(bo->foreign);
	} else {
		vunmap(bo->vaddr);
		vtpu_bo_free_pages(bo, bo->npages);
		atomic64_sub(bo->size, &bo->vdev->mem_used);
	}
	dma_resv_fini(&bo->resv);
	mutex_destroy(&bo->dmabuf_lock);
	kfree(bo);
}

void vtpu_bo_put(struct vtpu_kbo *bo)
{
	kref_put(&bo->ref, vtpu_bo_release);
}

/*
 * Return: the buffer with a reference taken, or NULL; *@ro tells whether
 * the handle is read-only (it came from a read-only export).
 */
struct vtpu_kbo *vtpu_bo_lookup_ro(struct vtpu_file *vfile, u32 handle,
				   bool *ro)
{
	struct vtpu_kbo *bo;

	xa_lock(&vfile->bos);
	bo = xa_load(&vfile->bos, handle);
	if (bo) {
		kref_get(&bo->ref);
		*ro = xa_get_mark(&vfile->bos, handle, VTPU_BO_MARK_RO);
	}
	xa_unlock(&vfile->bos);
	return bo;
}

/* Return: the buffer with a reference taken, or NULL. */
struct vtpu_kbo *vtpu_bo_lookup(struct vtpu_file *vfile, u32 handle)
{
	bool ro;

	return vtpu_bo_lookup_ro(vfile, handle, &ro);
}

static u64 vtpu_bo_mmap_offset(u32 handle)
{
	return (u64)handle << VTPU_MMAP_SHIFT;
}

int vtpu_bo_create_ioctl(struct vtpu_file *vfile, void *data,
			 struct vtpu_ioctl_undo *undo)
{
	struct vtpu_device *vdev = vfile->vdev;
	struct vtpu_bo_create *args = data;
	struct vtpu_kbo *bo;
	u64 size;
	u32 handle;
	int ret;

	if (args->flags)
		return -EINVAL;
	if (!args->size || args->size > vdev->mem_cap)
		return -EINVAL;
	size = PAGE_ALIGN(args->size);

	bo = vtpu_bo_alloc(vdev, size);
	if (IS_ERR(bo))
		return PTR_ERR(bo);
	ret = xa_alloc(&vfile->bos, &handle, bo,
		       XA_LIMIT(1, VTPU_MAX_BO_HANDLE - 1), GFP_KERNEL);
	if (ret) {
		vtpu_bo_put(bo);
		return ret == -EBUSY ? -ENOSPC : ret;
	}
	undo->bo = bo;
	undo->handle = handle;
	args->handle = handle;
	args->size = size;
	args->mmap_offset = vtpu_bo_mmap_offset(handle);
	dev_dbg(vdev->dev, "bo %u: %llu bytes\n", handle, size);
	trace_vtpu_bo_create(vfile, handle, size);
	return 0;
}

/*
 * The caller never learnt of @undo's new handle (its struct could not be
 * copied back): close it, if it is still that buffer's. A read-only
 * handle made writable by an import becomes read-only again.
 */
void vtpu_bo_undo(struct vtpu_file *vfile, struct vtpu_ioctl_undo *undo)
{
	if (!undo->bo)
		return;
	if (undo->ro_cleared) {
		xa_lock(&vfile->bos);
		if (xa_load(&vfile->bos, undo->handle) == undo->bo)
			__xa_set_mark(&vfile->bos, undo->handle,
				      VTPU_BO_MARK_RO);
		xa_unlock(&vfile->bos);
		return;
	}
	if (xa_cmpxchg(&vfile->bos, undo->handle, undo->bo, NULL, 0) ==
	    undo->bo)
		vtpu_bo_put(undo->bo);
}

int vtpu_bo_info_ioctl(struct vtpu_file *vfile, void *data,
		       struct vtpu_ioctl_undo *undo)
{
	struct vtpu_bo_info *args = data;
	struct vtpu_kbo *bo;

	if (args->pad)
		return -EINVAL;
	bo = vtpu_bo_lookup(vfile, args->handle);
	if (!bo)
		return -ENOENT;
	args->size = bo->size;
	args->mmap_offset = vtpu_bo_mmap_offset(args->handle);
	vtpu_bo_put(bo);
	return 0;
}

int vtpu_bo_close_ioctl(struct vtpu_file *vfile, void *data,
			struct vtpu_ioctl_undo *undo)
{
	struct vtpu_bo_close *args = data;
	struct vtpu_kbo *bo;

	if (args->pad)
		return -EINVAL;
	bo = xa_erase(&vfile->bos, args->handle);
	if (!bo)
		return -ENOENT;
	vtpu_bo_put(bo);
	return 0;
}

/*
 * What a file's handles hold, for debugfs and fdinfo: @total bytes in
 * @nbos buffers, @shared of them in buffers exported as a dma-buf (seen by
 * another client or driver). The handles cannot go while xa_lock is held.
 */
void vtpu_file_bo_usage(struct vtpu_file *vfile, unsigned long *nbos,
			u64 *total, u64 *shared)
{
	struct vtpu_kbo *bo;
	unsigned long handle;

	*nbos = 0;
	*total = 0;
	*shared = 0;
	xa_lock(&vfile->bos);
	xa_for_each(&vfile->bos, handle, bo) {
		(*nbos)++;
		*total += bo->size;
		/* dmabuf_lock guards the pointers; a snapshot is all we need */
		if (data_race(bo->dmabuf[0] || bo->dmabuf[1]))
			*shared += bo->size;
	}
	xa_unlock(&vfile->bos);
}

/* Drop every handle of a closing file; jobs and mappings keep their refs. */
void vtpu_file_bos_fini(struct vtpu_file *vfile)
{
	struct vtpu_kbo *bo;
	unsigned long handle;

	xa_for_each(&vfile->bos, handle, bo) {
		xa_erase(&vfile->bos, handle);
		vtpu_bo_put(bo);
	}
	xa_destroy(&vfile->bos);
}

/* A mapping holds a reference, so the pages outlive the handle. */
static void vtpu_bo_vm_open(struct vm_area_struct *vma)
{
	struct vtpu_kbo *bo = vma->vm_private_data;

	kref_get(&bo->ref);
}

static void vtpu_bo_vm_close(struct vm_area_struct *vma)
{
	vtpu_bo_put(vma->vm_private_data);
}

/*
 * Every page is inserted at mmap time; this brings back one that was
 * zapped since (MADV_DONTNEED, a child's copy of the mapping after
 * fork), as GEM shmem's and udmabuf's fault handlers do.
 */
static vm_fault_t vtpu_bo_vm_fault(struct vm_fault *vmf)
{
	struct vm_area_struct *vma = vmf->vma;
	struct vtpu_kbo *bo = vma->vm_private_data;
	/* vm_pgoff: the mapping's first page within the buffer */
	pgoff_t page = vmf->pgoff;

	if (page >= bo->npages)
		return VM_FAULT_SIGBUS;
	/* vm_map_pages() made the mapping VM_MIXEDMAP */
	return vmf_insert_mixed(vma, vmf->address,
				page_to_pfn_t(bo->pages[page]));
}

static const struct vm_operations_struct vtpu_bo_vm_ops = {
	.open = vtpu_bo_vm_open,
	.close = vtpu_bo_vm_close,
	.fault = vtpu_bo_vm_fault,
};

/*
 * Map @bo's pages from vma->vm_pgoff on; the mapping takes a reference.
 * @ro: the caller may only read the buffer.
 */
static int vtpu_bo_map_user(struct vtpu_kbo *bo, struct vm_area_struct *vma,
			    bool ro)
{
	unsigned long first = vma->vm_pgoff;
	int ret;

	/*
	 * A private (copy-on-write) mapping would not be seen by the device.
	 * MAYSHARE: a shared mapping of a read-only file is not VM_SHARED.
	 */
	if (!(vma->vm_flags & VM_MAYSHARE))
		return -EINVAL;
	if (first >= bo->npages || vma_pages(vma) > bo->npages - first)
		return -EINVAL;
	if (ro && (vma->vm_flags & VM_WRITE))
		return -EACCES;
	if (ro)
		vtpu_vma_flags_clear(vma, VM_MAYWRITE);
	vtpu_vma_flags_set(vma, VM_DONTEXPAND | VM_DONTDUMP);
	ret = vm_map_pages(vma, bo->pages, bo->npages);
	if (ret)
		return ret;
	kref_get(&bo->ref);
	vma->vm_ops = &vtpu_bo_vm_ops;
	vma->vm_private_data = bo;
	return 0;
}

/* Another driver's buffer: the exporter maps its own memory. */
static int vtpu_bo_map_foreign(struct vtpu_kbo *bo, struct vm_area_struct *vma,
			       bool ro)
{
	if (ro && (vma->vm_flags & VM_WRITE))
		return -EACCES;
	if (ro)
		vtpu_vma_flags_clear(vma, VM_MAYWRITE);
	return dma_buf_mmap(bo->foreign, vma, vma->vm_pgoff);
}

int vtpu_bo_mmap(struct vtpu_file *vfile, struct vm_area_struct *vma)
{
	const unsigned long shift = VTPU_MMAP_SHIFT - PAGE_SHIFT;
	struct vtpu_kbo *bo;
	bool ro;
	int ret;

	bo = vtpu_bo_lookup_ro(vfile, vma->vm_pgoff >> shift, &ro);
	if (!bo)
		return -EINVAL;
	/* vm_map_pages() reads vm_pgoff as the first page of the buffer */
	vma->vm_pgoff &= (1UL << shift) - 1;
	if (bo->foreign)
		ret = vtpu_bo_map_foreign(bo, vma, ro);
	else
		ret = vtpu_bo_map_user(bo, vma, ro);
	vtpu_bo_put(bo);
	return ret;
}

/* ---- dma-buf ------------------------------------------------------------- */

static struct sg_table *vtpu_dmabuf_map(struct dma_buf_attachment *attach,
					enum dma_data_direction dir)
{
	struct vtpu_kbo *bo = attach->dmabuf->priv;
	struct sg_table *sgt;
	int ret;

	sgt = kzalloc(sizeof(*sgt), GFP_KERNEL);
	if (!sgt)
		return ERR_PTR(-ENOMEM);
	ret = sg_alloc_table_from_pages(sgt, bo->pages, bo->npages, 0,
					bo->size, GFP_KERNEL);
	if (ret)
		goto err_free;
	ret = dma_map_sgtable(attach->dev, sgt, dir, 0);
	if (ret)
		goto err_free_table;
	return sgt;

err_free_table:
	sg_free_table(sgt);
err_free:
	kfree(sgt);
	return ERR_PTR(ret);
}

static void vtpu_dmabuf_unmap(struct dma_buf_attachment *attach,
			      struct sg_table *sgt,
			      enum dma_data_direction dir)
{
	dma_unmap_sgtable(attach->dev, sgt, dir, 0);
	sg_free_table(sgt);
	kfree(sgt);
}

/* A dma-buf of @bo: read-write (1) or read-only (0)? */
static bool vtpu_dmabuf_writable(struct dma_buf *dmabuf)
{
	return dmabuf->file->f_mode & FMODE_WRITE;
}

/*
 * The dma-buf holds a reference on the buffer from export to release; the
 * buffer forgets it here, so the next export in its mode makes a new one.
 */
static void vtpu_dmabuf_release(struct dma_buf *dmabuf)
{
	struct vtpu_kbo *bo = dmabuf->priv;
	unsigned int i;

	mutex_lock(&bo->dmabuf_lock);
	for (i = 0; i < ARRAY_SIZE(bo->dmabuf); i++)
		if (bo->dmabuf[i] == dmabuf)
			bo->dmabuf[i] = NULL;
	mutex_unlock(&bo->dmabuf_lock);
	vtpu_bo_put(bo);
}

static int vtpu_dmabuf_mmap(struct dma_buf *dmabuf, struct vm_area_struct *vma)
{
	return vtpu_bo_map_user(dmabuf->priv, vma,
				!vtpu_dmabuf_writable(dmabuf));
}

static int vtpu_dmabuf_vmap(struct dma_buf *dmabuf, struct iosys_map *map)
{
	struct vtpu_kbo *bo = dmabuf->priv;

	iosys_map_set_vaddr(map, bo->vaddr);
	return 0;
}

static const struct dma_buf_ops vtpu_dmabuf_ops = {
	.map_dma_buf = vtpu_dmabuf_map,
	.unmap_dma_buf = vtpu_dmabuf_unmap,
	.release = vtpu_dmabuf_release,
	.mmap = vtpu_dmabuf_mmap,
	.vmap = vtpu_dmabuf_vmap,
};

/*
 * Return: @bo's dma-buf in mode @rw, with a reference for the caller: the
 * one it has while that is open, else a new one; or an ERR_PTR.
 */
static struct dma_buf *vtpu_bo_get_dmabuf(struct vtpu_kbo *bo, bool rw)
{
	DEFINE_DMA_BUF_EXPORT_INFO(info);
	struct dma_buf *dmabuf;

	mutex_lock(&bo->dmabuf_lock);
	dmabuf = bo->dmabuf[rw];
	/*
	 * A dma-buf whose last fd is being closed still sits here until its
	 * release (which takes our lock) forgets it: a new one then.
	 */
	if (dmabuf && atomic_long_inc_not_zero(&dmabuf->file->f_count))
		goto out;
	info.ops = &vtpu_dmabuf_ops;
	info.size = bo->size;
	info.flags = rw ? O_RDWR : O_RDONLY;
	info.priv = bo;
	info.resv = &bo->resv;	/* one for both modes: the buffer's */
	kref_get(&bo->ref);	/* the dma-buf's, put by its release */
	dmabuf = dma_buf_export(&info);
	if (IS_ERR(dmabuf)) {
		vtpu_bo_put(bo);
		goto out;
	}
	bo->dmabuf[rw] = dmabuf;
	/* from now on jobs that use it publish their fences (vtpu_sync.c) */
	WRITE_ONCE(bo->shared, true);
out:
	mutex_unlock(&bo->dmabuf_lock);
	return dmabuf;
}

int vtpu_bo_export_ioctl(struct vtpu_file *vfile, void *data,
			 struct vtpu_ioctl_undo *undo)
{
	struct vtpu_bo_export *args = data;
	bool rw = args->flags & O_RDWR;
	struct dma_buf *dmabuf;
	struct vtpu_kbo *bo;
	bool ro;
	int fd;

	if (args->pad || args->flags & ~(O_CLOEXEC | O_RDWR))
		return -EINVAL;
	bo = vtpu_bo_lookup_ro(vfile, args->handle, &ro);
	if (!bo)
		return -ENOENT;
	if (ro && rw) {
		vtpu_bo_put(bo);
		return -EACCES;
	}
	if (bo->foreign) {	/* its dma-buf is the exporter's */
		dmabuf = bo->foreign;
		get_dma_buf(dmabuf);
	} else {
		dmabuf = vtpu_bo_get_dmabuf(bo, rw);
	}
	vtpu_bo_put(bo);
	if (IS_ERR(dmabuf))
		return PTR_ERR(dmabuf);
	/* installed by vtpu_ioctl() once @args is back in user space */
	fd = get_unused_fd_flags(args->flags & O_CLOEXEC);
	if (fd < 0) {
		dma_buf_put(dmabuf);
		return fd;
	}
	undo->file = dmabuf->file;
	undo->fd = fd;
	args->fd = fd;
	return 0;
}

/*
 * Return: the handle this file already has for @dmabuf's buffer, with its
 * buffer in *@bo, or 0. The caller holds import_lock.
 */
static u32 vtpu_bo_find_handle(struct vtpu_file *vfile, struct dma_buf *dmabuf,
			       struct vtpu_kbo **bo)
{
	bool own = dmabuf->ops == &vtpu_dmabuf_ops;
	struct vtpu_kbo *entry;
	unsigned long handle;

	lockdep_assert_held(&vfile->import_lock);
	xa_for_each(&vfile->bos, handle, entry) {
		if (own ? entry == dmabuf->priv : entry->foreign == dmabuf) {
			*bo = entry;
			return handle;
		}
	}
	return 0;
}

/*
 * A buffer of @vdev for another driver's @dmabuf, mapped into the kernel
 * (see the top of this file); Return: it, or an ERR_PTR.
 */
static struct vtpu_kbo *vtpu_bo_wrap_foreign(struct vtpu_device *vdev,
					     struct dma_buf *dmabuf)
{
	struct vtpu_kbo *bo;
	int ret;

	if (!dmabuf->size || !PAGE_ALIGNED(dmabuf->size))
		return ERR_PTR(-EINVAL);
	bo = kzalloc(sizeof(*bo), GFP_KERNEL_ACCOUNT);
	if (!bo)
		return ERR_PTR(-ENOMEM);
	kref_init(&bo->ref);
	mutex_init(&bo->dmabuf_lock);
	dma_resv_init(&bo->resv);
	bo->vdev = vdev;
	bo->size = dmabuf->size;
	bo->npages = dmabuf->size >> PAGE_SHIFT;

	/* waits for the writes pending on it (interruptible) */
	ret = dma_buf_begin_cpu_access(dmabuf, DMA_BIDIRECTIONAL);
	if (ret)
		goto err_free;
	ret = vtpu_dma_buf_vmap(dmabuf, &bo->foreign_map);
	if (ret) {
		dev_dbg(vdev->dev, "dma-buf %s: no kernel mapping (%d)\n",
			dmabuf->exp_name, ret);
		ret = -EOPNOTSUPP;
		goto err_end;
	}
	if (bo->foreign_map.is_iomem ||
	    !PAGE_ALIGNED(bo->foreign_map.vaddr)) {
		dev_dbg(vdev->dev, "dma-buf %s: maps as I/O or unaligned memory\n",
			dmabuf->exp_name);
		ret = -EOPNOTSUPP;
		goto err_vunmap;
	}
	get_dma_buf(dmabuf);
	bo->foreign = dmabuf;
	bo->vaddr = bo->foreign_map.vaddr;
	return bo;

err_vunmap:
	vtpu_dma_buf_vunmap(dmabuf, &bo->foreign_map);
err_end:
	dma_buf_end_cpu_access(dmabuf, DMA_BIDIRECTIONAL);
err_free:
	dma_resv_fini(&bo->resv);
	mutex_destroy(&bo->dmabuf_lock);
	kfree(bo);
	return ERR_PTR(ret);
}

/*
 * A handle for a dma-buf: vtpu's own (the same pages), or another
 * driver's (vtpu_bo_wrap_foreign()). A file has one handle per buffer:
 * importing it again returns that one. A dma-buf opened read-only gives
 * a read-only handle.
 */
int vtpu_bo_import_ioctl(struct vtpu_file *vfile, void *data,
			 struct vtpu_ioctl_undo *undo)
{
	struct vtpu_bo_import *args = data;
	struct dma_buf *dmabuf;
	struct vtpu_kbo *bo;
	u32 handle;
	bool ro;
	int ret = 0;

	if (args->flags || args->pad)
		return -EINVAL;
	dmabuf = dma_buf_get(args->fd);
	if (IS_ERR(dmabuf))
		return PTR_ERR(dmabuf);
	ro = !vtpu_dmabuf_writable(dmabuf);

	/* two imports of one buffer must not race to two handles */
	mutex_lock(&vfile->import_lock);
	handle = vtpu_bo_find_handle(vfile, dmabuf, &bo);
	if (handle) {
		/* a writable import makes a read-only handle writable */
		xa_lock(&vfile->bos);
		if (!ro && xa_get_mark(&vfile->bos, handle, VTPU_BO_MARK_RO)) {
			__xa_clear_mark(&vfile->bos, handle, VTPU_BO_MARK_RO);
			undo->bo = bo;
			undo->handle = handle;
			undo->ro_cleared = true;
		}
		xa_unlock(&vfile->bos);
		goto out;
	}
	if (dmabuf->ops == &vtpu_dmabuf_ops) {
		bo = dmabuf->priv;
		kref_get(&bo->ref);
	} else {
		bo = vtpu_bo_wrap_foreign(vfile->vdev, dmabuf);
		if (IS_ERR(bo)) {
			ret = PTR_ERR(bo);
			goto out;
		}
	}
	/* marked before the lock drops: never writable, not briefly */
	xa_lock(&vfile->bos);
	ret = __xa_alloc(&vfile->bos, &handle, bo,
			 XA_LIMIT(1, VTPU_MAX_BO_HANDLE - 1), GFP_KERNEL);
	if (!ret && ro)
		__xa_set_mark(&vfile->bos, handle, VTPU_BO_MARK_RO);
	xa_unlock(&vfile->bos);
	if (ret) {
		vtpu_bo_put(bo);
		ret = ret == -EBUSY ? -ENOSPC : ret;
		goto out;
	}
	undo->bo = bo;
	undo->handle = handle;
out:
	mutex_unlock(&vfile->import_lock);
	dma_buf_put(dmabuf);
	if (ret)
		return ret;
	trace_vtpu_bo_import(vfile, handle, bo->size);
	args->handle = handle;
	args->size = bo->size;
	args->mmap_offset = vtpu_bo_mmap_offset(handle);
	return 0;
}
