# libvtpu's sources (the engine's objects are added by the top Makefile).
LIBVTPU_SRCS := \
	device.c \
	cmdbuf.c \
	backend_cpu.c
