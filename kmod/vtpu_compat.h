/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * What differs between the kernels vtpu builds on, in one place: each
 * helper is named for what it does, with the version that changed it.
 */
#ifndef VTPU_COMPAT_H
#define VTPU_COMPAT_H

#include <linux/device.h>
#include <linux/dma-buf.h>
#include <linux/mm.h>
#include <linux/module.h>
#include <linux/version.h>

/* kmod/Kbuild says so first; this stops a build that went around it */
#if LINUX_VERSION_CODE < KERNEL_VERSION(6, 1, 0)
#error "vtpu needs Linux 6.1 or newer"
#endif

/* VTPU_PARAM_KERNEL_VERSION: the kernel this module was built for */
#define VTPU_BUILT_FOR_KERNEL LINUX_VERSION_CODE

/* 6.3 made vma->vm_flags read-only: vm_flags_set()/vm_flags_clear() */
static inline void vtpu_vma_flags_set(struct vm_area_struct *vma,
				      unsigned long flags)
{
#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 3, 0)
	vm_flags_set(vma, flags);
#else
	vma->vm_flags |= flags;
#endif
}

static inline void vtpu_vma_flags_clear(struct vm_area_struct *vma,
					unsigned long flags)
{
#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 3, 0)
	vm_flags_clear(vma, flags);
#else
	vma->vm_flags &= ~flags;
#endif
}

/* 6.4 dropped class_create()'s owner argument */
#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 4, 0)
#define vtpu_class_create(name) class_create(name)
#else
#define vtpu_class_create(name) class_create(THIS_MODULE, name)
#endif

/* 6.13 made MODULE_IMPORT_NS() take a string */
#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 13, 0)
#define VTPU_IMPORT_NS_DMA_BUF() MODULE_IMPORT_NS("DMA_BUF")
#else
#define VTPU_IMPORT_NS_DMA_BUF() MODULE_IMPORT_NS(DMA_BUF)
#endif

/*
 * 6.2 made dma_buf_vmap() and dma_buf_vunmap() expect the reservation lock
 * held by the caller; their _unlocked() forms take it
 */
static inline int vtpu_dma_buf_vmap(struct dma_buf *dmabuf,
				    struct iosys_map *map)
{
#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 2, 0)
	return dma_buf_vmap_unlocked(dmabuf, map);
#else
	return dma_buf_vmap(dmabuf, map);
#endif
}

static inline void vtpu_dma_buf_vunmap(struct dma_buf *dmabuf,
				       struct iosys_map *map)
{
#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 2, 0)
	dma_buf_vunmap_unlocked(dmabuf, map);
#else
	dma_buf_vunmap(dmabuf, map);
#endif
}

#endif /* VTPU_COMPAT_H */
