/* SPDX-License-Identifier: GPL-2.0-only OR MIT */
/*
 * The engine's whole view of its environment: fixed-width types, memcpy,
 * memset and snprintf, an errno value, a counter (ENGINE_SEQ_*) that
 * hands out numbers once each, to any thread, and ENGINE_LOAD_U32(): one
 * load of an index that buffer memory holds (user space may change it
 * while a job runs: a bound checked on one load must hold for the value
 * used, so the compiler may not load it twice). The engine is built twice, into
 * vtpu.ko and into libvtpu's cpu backend, and includes nothing else.
 */
#ifndef VTPU_ENGINE_ENV_H
#define VTPU_ENGINE_ENV_H

#ifdef __KERNEL__
#include <linux/types.h>
#include <linux/string.h>
/* the kernel's, declared here: <linux/kernel.h> brings macros (round_up) */
int snprintf(char *buf, size_t size, const char *fmt, ...);
#include <linux/errno.h>
#include <linux/stddef.h>
#include <linux/atomic.h>
#define ENGINE_LIKELY(x) likely(x)
#define ENGINE_UNLIKELY(x) unlikely(x)
#define ENGINE_SEQ_DEFINE(name) static atomic64_t name = ATOMIC64_INIT(0)
#define ENGINE_SEQ_NEXT(name) ((u64)atomic64_inc_return(&(name)))
#define ENGINE_LOAD_U32(p) READ_ONCE(*(p))
#else
#include <stdint.h>
#include <stddef.h>
#include <stdbool.h>
#include <string.h>
#include <stdio.h>
#include <errno.h>
#include <linux/types.h>
typedef uint8_t u8;
typedef uint16_t u16;
typedef uint32_t u32;
typedef uint64_t u64;
typedef int32_t s32;
typedef int64_t s64;
#define ENGINE_LIKELY(x) __builtin_expect(!!(x), 1)
#define ENGINE_UNLIKELY(x) __builtin_expect(!!(x), 0)
#define ENGINE_SEQ_DEFINE(name) static u64 name
#define ENGINE_SEQ_NEXT(name) __atomic_add_fetch(&(name), 1, __ATOMIC_RELAXED)
#define ENGINE_LOAD_U32(p) __atomic_load_n((p), __ATOMIC_RELAXED)
#ifndef noinline
#define noinline __attribute_noinline__ /* glibc <sys/cdefs.h> */
#endif
/* as the kernel's <linux/compiler_attributes.h> */
#ifdef __has_attribute
#if __has_attribute(__uninitialized__)
#define __uninitialized __attribute__((__uninitialized__))
#endif
#endif
#ifndef __uninitialized
#define __uninitialized
#endif
#endif

#endif /* VTPU_ENGINE_ENV_H */
