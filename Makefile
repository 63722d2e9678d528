# SPDX-License-Identifier: MIT
# vtpu: top-level build.
#
#   make              the module (kmod/vtpu.ko) and all of user space (build/),
#                     the Python package's generated declarations included
#   make check        host unit tests, then the selftests in a VM (or on the
#                     host with VTPU_VM_FLAGS=--host) against the real module,
#                     on Debian's 6.1 and 6.12 kernels,
#                     and on a debug kernel (built once; QUICK=1 skips that)
#   make demo         the main job: MNIST trained on /dev/vtpu0 (UML here)
#   make bench        the training-speed table: engine, OpenBLAS, PyTorch
#   make deps         install what the build and the VM need (Debian, apt)
#   make install      libvtpu.so, headers, vtpu.pc, programs, man pages, the
#                     udev rule, the module's source for DKMS (install.mk:
#                     PREFIX=/usr/local DESTDIR= DKMS=1 ...)
#   make uninstall    removes what make install put (same variables)
#   make KDIR=...     build the module against another kernel tree
#   make module-6.12  the module for Debian's newest installed 6.12 headers,
#                     in build/kmod-KVER/kmod/vtpu.ko (kmod/vtpu.ko stays);
#                     any series or exact release: module-6.12.57+deb12-amd64
#   make W=1 C=1      kernel warnings and sparse, passed to Kbuild
#
#   make V=1          show every command line (default: one short line each,
#                     "CC libvtpu/model.c", as Kbuild prints)
#
# Fragments: each directory lists its own sources in a *.mk file included
# below; kmod/engine/engine.mk is shared with Kbuild so the engine's file
# list and SIMD flags are written once.

SRCTOP := $(abspath $(dir $(lastword $(MAKEFILE_LIST))))
BUILD ?= $(SRCTOP)/build
BIN := $(BUILD)/bin
OBJ := $(BUILD)/obj

# The kernel to build against: the running one when its build tree exists,
# else Debian's headers for the kernel tools/vtpu-vm boots by default,
# Debian 12's own series, 6.1 (not whichever is newest: the 6.12 headers
# may be installed beside them, for KDIR=... and the second selftest run).
ifeq ($(origin KDIR),undefined)
KDIR := $(firstword $(wildcard /lib/modules/$(shell uname -r)/build) \
	  $(shell ls -d /usr/src/linux-headers-6.1.*-amd64 2>/dev/null | \
		  sort -V | tail -n 1))
endif

# Quiet by default: $(call say,CC,$@) before a command prints "  CC  path"
# instead of the command line; V=1 prints the command lines.
V ?= 0
ifeq ($(V),1)
say =
else
say = @printf '  %-6s %s\n' '$(1)' '$(patsubst $(SRCTOP)/%,%,$(2))';
endif

CC ?= cc
OPT ?= -O2
CFLAGS ?= $(OPT) -g
WARN := -Wall -Wextra -Wshadow -Wstrict-prototypes -Wmissing-prototypes \
	-Wno-unused-parameter
# The release, from VERSION (the module's Kbuild reads it too).
VTPU_VERSION := $(shell cat $(SRCTOP)/VERSION)
CPPFLAGS += -I$(SRCTOP)/uapi -I$(SRCTOP)/libvtpu/include \
	-I$(SRCTOP)/kmod/engine -D_GNU_SOURCE \
	-DVTPU_VERSION='"$(VTPU_VERSION)"'
DRM_CFLAGS := $(shell pkg-config --cflags libdrm 2>/dev/null)
DRM_LIBS := $(shell pkg-config --libs libdrm 2>/dev/null || echo -ldrm)
# libvtpu loads OpenBLAS itself when a program asks for its GEMM
# (libvtpu/openblas.c); only programs that call cblas_* add BLAS_LIBS.
BLAS_LIBS := -lopenblas
LDLIBS_LIBVTPU := $(DRM_LIBS) -lz -lpthread -lm -ldl
# Debian's python3: it generates the Python package's declarations of
# libvtpu (python/python.mk) and make install puts the package where it
# looks; without it (no PY_VER) both leave the package out.
PYTHON ?= /usr/bin/python3
PY_VER := $(shell $(PYTHON) -c 'import sys; print("%d.%d" % sys.version_info[:2])' 2>/dev/null)

.PHONY: all module user host-tests deps check demo bench clean \
	kselftest-headers FORCE

all: module user

deps:
	@$(SRCTOP)/tools/install-deps

# ---- kernel module -------------------------------------------------------

module: kmod/vtpu.ko

kmod/vtpu.ko: FORCE
	@test -n "$(KDIR)" || { \
	  echo "no kernel build tree for the running kernel $(shell uname -r):" \
	    "install linux-headers-$(shell uname -r)" \
	    "(apt-get install linux-headers-$(shell uname -r)), run 'make deps'" \
	    "for Debian's 6.1 headers, or pass KDIR=" >&2; exit 1; }
	@test -d "$(KDIR)" || { \
	  echo "no kernel build tree: KDIR=$(KDIR) does not exist" >&2; exit 1; }
	$(call say,KBUILD,kmod/vtpu.ko against $(KDIR))$(MAKE) \
	  --no-print-directory -C $(KDIR) M=$(SRCTOP) modules

# module-SERIES (module-6.12) or module-KVER (module-6.12.57+deb12-amd64):
# the module built against Debian's headers for that kernel (the newest
# installed of the series) in its own copy of the sources, build/kmod-KVER/,
# so kmod/vtpu.ko and the default KDIR stay as they are. tools/vtpu-vm
# --kernel SERIES loads build/kmod-KVER/kmod/vtpu.ko.
KMOD_SRCS = $(shell cd $(SRCTOP) && find Kbuild VERSION uapi kmod -type f \
	\( -name '*.[ch]' -o -name Kbuild -o -name '*.mk' -o -name VERSION \))

module-%: FORCE
	@s='$*'; case $$s in \
	  *-amd64) kver=$$s; [ -d /usr/src/linux-headers-$$s ] || kver= ;; \
	  *) re=$$(printf '%s' "$$s" | sed 's/\./\\./g'); \
	     kver=$$(ls /usr/src | sed -n 's/^linux-headers-//p' | \
	       grep -E "^$$re\.[0-9]+(-[0-9]+)?(\+deb[0-9]+)?-amd64$$" | \
	       sort -V | tail -n 1) ;; \
	esac; \
	test -n "$$kver" || { echo "no kernel build tree for Linux $*:" \
	  "install Debian's linux-headers-$*...-amd64 (tools/install-deps" \
	  "installs 6.12's)" >&2; exit 1; }; \
	dst=$(BUILD)/kmod-$$kver; mkdir -p $$dst; \
	cd $(SRCTOP) && cp -p --parents $(KMOD_SRCS) $$dst/ && \
	$(if $(filter 1,$(V)),,printf '  %-6s %s\n' KBUILD \
	  "build/kmod-$$kver/kmod/vtpu.ko against linux-headers-$$kver";) \
	$(MAKE) --no-print-directory -C /usr/src/linux-headers-$$kver \
	  M=$$dst modules

# ---- user space: engine, libvtpu, tools, examples, selftests -------------

# Read by the fragments' rules (prerequisites expand when read). The
# in-tree programs link the static library; libvtpu.so.$(VTPU_VERSION)
# (soname libvtpu.so.0) is built beside it from the same objects, for
# make install and for programs outside the tree.
LIBVTPU := $(BUILD)/lib/libvtpu.a
VTPU_SOMAJOR := $(firstword $(subst ., ,$(VTPU_VERSION)))
LIBVTPU_SONAME := libvtpu.so.$(VTPU_SOMAJOR)
LIBVTPU_SO := $(BUILD)/lib/libvtpu.so.$(VTPU_VERSION)
LIBVTPU_SO_LINKS := $(BUILD)/lib/$(LIBVTPU_SONAME) $(BUILD)/lib/libvtpu.so

include $(SRCTOP)/kmod/engine/engine.mk
include $(SRCTOP)/libvtpu/libvtpu.mk
include $(SRCTOP)/tools/tools.mk
include $(SRCTOP)/examples/examples.mk
include $(SRCTOP)/selftests/vtpu/selftests.mk
include $(SRCTOP)/libvtpu/tests/tests.mk
include $(SRCTOP)/python/python.mk
include $(SRCTOP)/install.mk
# make fuzz (the validator under libFuzzer) and make check-debug (KASAN,
# lockdep, kmemleak, fault injection): optional tiers with their own deps
-include $(SRCTOP)/selftests/vtpu/fuzz.mk
-include $(SRCTOP)/selftests/vtpu/debug.mk

ENGINE_OBJS := $(ENGINE_SRCS:%.c=$(OBJ)/engine/%.o)
LIBVTPU_OBJS := $(LIBVTPU_SRCS:%.c=$(OBJ)/libvtpu/%.o)

user: $(LIBVTPU) $(LIBVTPU_SO_LINKS) $(TOOLS) $(EXAMPLES) $(HOST_TESTS) $(SELFTESTS) \
	$(PY_GEN)

# The host unit tests alone (selftests/vtpu/test-asan builds them again
# with the sanitizers, BUILD=build/asan).
host-tests: $(HOST_TESTS)

$(OBJ)/engine/%.o: $(SRCTOP)/kmod/engine/%.c
	@mkdir -p $(@D)
	$(call say,CC,$<)$(CC) $(CPPFLAGS) $(CFLAGS) $(WARN) -fPIC \
	  -fvisibility=hidden $(ENGINE_CFLAGS) $(ENGINE_CFLAGS_$*) \
	  -MMD -MP -c -o $@ $<

# Only what the public headers declare VTPU_API leaves the shared library.
$(OBJ)/libvtpu/%.o: $(SRCTOP)/libvtpu/%.c
	@mkdir -p $(@D)
	$(call say,CC,$<)$(CC) $(CPPFLAGS) $(DRM_CFLAGS) $(CFLAGS) $(WARN) \
	  -fPIC -fvisibility=hidden -MMD -MP -c -o $@ $<

$(LIBVTPU): $(LIBVTPU_OBJS) $(ENGINE_OBJS)
	@mkdir -p $(@D)
	$(call say,AR,$@)rm -f $@ && $(AR) rcs $@ $^

# -z defs: every symbol the library uses is found in what it links.
$(LIBVTPU_SO): $(LIBVTPU_OBJS) $(ENGINE_OBJS) $(SRCTOP)/libvtpu/libvtpu.map
	@mkdir -p $(@D)
	$(call say,LD,$@)$(CC) $(LDFLAGS) -shared -Wl,-soname,$(LIBVTPU_SONAME) \
	  -Wl,--version-script=$(SRCTOP)/libvtpu/libvtpu.map -Wl,-z,defs \
	  -o $@ $(LIBVTPU_OBJS) $(ENGINE_OBJS) $(LDLIBS_LIBVTPU)

# libvtpu.so.0 -> libvtpu.so.0.1.0 (what programs load), libvtpu.so ->
# libvtpu.so.0 (what -lvtpu finds)
$(BUILD)/lib/$(LIBVTPU_SONAME): $(LIBVTPU_SO)
	$(call say,LN,$@)ln -sfn $(notdir $<) $@
$(BUILD)/lib/libvtpu.so: $(BUILD)/lib/$(LIBVTPU_SONAME)
	$(call say,LN,$@)ln -sfn $(notdir $<) $@

$(OBJ)/%.o: $(SRCTOP)/%.c
	@mkdir -p $(@D)
	$(call say,CC,$<)$(CC) $(CPPFLAGS) $(DRM_CFLAGS) $(CFLAGS) $(WARN) \
	  -MMD -MP -c -o $@ $<

-include $(shell find $(OBJ) -name '*.d' 2>/dev/null)

# ---- tests ----------------------------------------------------------------

# kselftest's harness, from Debian's linux-source-6.1 (extracted once).
KSFT_DIR := $(BUILD)/kselftest
KSFT_TAR := $(firstword $(wildcard /usr/src/linux-source-6.1.tar.xz))
KSFT_HDRS := $(KSFT_DIR)/kselftest_harness.h $(KSFT_DIR)/kselftest.h
KSFT_CFLAGS := -I$(KSFT_DIR)

kselftest-headers: $(KSFT_HDRS)
$(KSFT_HDRS):
	@test -n "$(KSFT_TAR)" || { echo "no linux-source-6.1: make deps" >&2; exit 1; }
	@mkdir -p $(KSFT_DIR)
	$(call say,GEN,$(KSFT_DIR))tar -xJf $(KSFT_TAR) -C $(KSFT_DIR) \
	  --strip-components=4 \
	  linux-source-6.1/tools/testing/selftests/kselftest_harness.h \
	  linux-source-6.1/tools/testing/selftests/kselftest.h
	@touch $(KSFT_HDRS)

# VTPU_VM_FLAGS: e.g. --host on a machine that can load modules itself.
VTPU_VM_FLAGS ?=

# QUICK=1: leave out the debug-kernel tier (and its first build).
QUICK ?=

# The second kernel make check proves: the module built for it too.
CHECK_KERNELS ?= 6.12

check: deps
	@$(MAKE) --no-print-directory all $(CHECK_KERNELS:%=module-%)
	@QUICK=$(QUICK) $(SRCTOP)/tools/run-checks $(VTPU_VM_FLAGS)

# The datasets: tools/get-datasets puts them in data/; ../shared/datasets
# beside the checkout has MNIST and Fashion-MNIST.
DATASETS ?= $(firstword $(wildcard $(SRCTOP)/data/mnist/.. \
	      $(SRCTOP)/../shared/datasets) $(SRCTOP)/data)
# The main job: MNIST trained on /dev/vtpu0. This machine cannot load
# modules, and QEMU's guest emulates floating point (~100x slower), so the
# demo runs the module under User-Mode Linux at native speed (the first run
# builds the UML kernel, ~10 CPU-minutes, then it is cached); with
# VTPU_VM_FLAGS=--host it runs on this machine's own kernel.
DEMO_RUNNER ?= $(if $(filter --host,$(VTPU_VM_FLAGS)),$(BIN)/vtpu-vm --host,\
	       $(SRCTOP)/tools/vtpu-uml)
DEMO_FLAGS ?= --epochs 10

demo: deps
	@$(MAKE) --no-print-directory all
	$(DEMO_RUNNER) -- sh -c '$(BIN)/vtpu-hello /dev/vtpu0 && \
	  $(BIN)/mnist --device /dev/vtpu0 --data $(DATASETS)/mnist $(DEMO_FLAGS)'

# The README's training-speed table: the three models at batch 128 on two
# threads, the engine (the code the kernel runs) against OpenBLAS's GEMM
# and PyTorch (python3-torch, installed here), taking turns. vtpu-bench
# drops OPENBLAS_CORETYPE and OPENBLAS_L2_SIZE itself.
BENCH_FLAGS ?= --threads 2 --reps 5 --batches 128

bench: deps
	@$(SRCTOP)/tools/install-deps --torch
	@$(MAKE) --no-print-directory user
	$(BIN)/vtpu-bench train $(BENCH_FLAGS)

clean:
	rm -rf $(BUILD)
	@if [ -n "$(KDIR)" ] && [ -d "$(KDIR)" ]; then \
	  $(MAKE) -C $(KDIR) M=$(SRCTOP) clean; fi

FORCE:

# Objects are not intermediates to delete after linking: keep them.
.SECONDARY:
