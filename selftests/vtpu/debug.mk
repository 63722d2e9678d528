# SPDX-License-Identifier: GPL-2.0-only
# make check-debug: the selftests on a debug kernel (KASAN, lockdep,
# atomic-sleep checks, kmemleak) and again under fault injection, in one
# guest: tools/check-debug. The kernel is Debian's linux-source-6.1 built
# once by tools/build-debug-kernel (about 16+ minutes of both cores, niced)
# and cached in ${VTPU_CACHE:-~/.cache/vtpu}/debug-kernel/; the module is
# built against it there, so kmod/vtpu.ko stays as it is. Included by the
# top Makefile.
#
#   make debug-kernel     build (or find) the kernel, print its path
#   make check-debug      that, then tools/check-debug

.PHONY: debug-kernel check-debug

debug-kernel:
	@$(SRCTOP)/tools/build-debug-kernel

check-debug: deps
	@$(MAKE) --no-print-directory user
	@$(SRCTOP)/tools/build-debug-kernel >/dev/null
	@$(SRCTOP)/tools/check-debug
