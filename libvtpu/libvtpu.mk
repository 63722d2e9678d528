# SPDX-License-Identifier: MIT
# libvtpu's sources (the engine's objects are added by the top Makefile).
LIBVTPU_SRCS := \
	device.c \
	cmdbuf.c \
	explain.c \
	backend_cpu.c \
	profile.c \
	openblas.c
# the data side of training: datasets, batches, progress, checkpoints
LIBVTPU_SRCS += \
	data.c \
	text.c \
	imagefolder.c \
	progress.c \
	checkpoint.c
# imagefolder.c decodes with libjpeg-turbo and libpng (Debian's
# libjpeg62-turbo-dev and libpng-dev)
LDLIBS_LIBVTPU += -ljpeg -lpng
LIBVTPU_SRCS += \
	graph.c \
	compile.c \
	runtime.c \
	model.c \
	gradcheck.c \
	applications.c
