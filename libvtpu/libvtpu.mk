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
# Data parallelism across processes (libvtpu/mpi.c) over Open MPI
# (Debian's libopenmpi-dev): on when pkg-config finds ompi-c, or forced
# with make MPI=1 / MPI=0. Without it mpi.c still defines the vtpu_dist_*
# functions (one rank; a job of several is refused): the same ABI.
LIBVTPU_SRCS += mpi.c
MPI ?= $(shell pkg-config --exists ompi-c 2>/dev/null && echo 1 || echo 0)
ifeq ($(MPI),1)
MPI_CFLAGS := $(shell pkg-config --cflags ompi-c) -DVTPU_HAVE_MPI
MPI_LIBS := $(shell pkg-config --libs ompi-c)
LDLIBS_LIBVTPU += $(MPI_LIBS)
endif
$(OBJ)/libvtpu/mpi.o: CPPFLAGS += $(MPI_CFLAGS)
# a build with or without MPI rebuilds mpi.o
$(OBJ)/libvtpu/mpi.o: $(BUILD)/mpi-$(MPI).stamp
$(BUILD)/mpi-$(MPI).stamp:
	@mkdir -p $(@D) && rm -f $(BUILD)/mpi-*.stamp && touch $@
