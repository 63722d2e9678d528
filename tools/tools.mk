# SPDX-License-Identifier: MIT
# build/bin/vtpu-vm (a script), vtpu-smi, vtpu-bench.
TOOLS := $(BIN)/vtpu-vm $(BIN)/vtpu-guest-lib.sh
TOOLS += $(BIN)/vtpu-bench

# vtpu-vm sources vtpu-guest-lib.sh (what it shares with tools/vtpu-uml)
# from its own directory: the copy goes with its library.
$(BIN)/vtpu-vm: $(SRCTOP)/tools/vtpu-vm $(BIN)/vtpu-guest-lib.sh
	@mkdir -p $(@D)
	$(call say,INSTALL,$@)install -m 755 $< $@

$(BIN)/vtpu-guest-lib.sh: $(SRCTOP)/tools/vtpu-guest-lib.sh
	@mkdir -p $(@D)
	$(call say,INSTALL,$@)install -m 644 $< $@

# vtpu-bench: main and shared helpers in bench.c, one bench_<name>.c per
# subcommand (listed in bench.h's BENCH_SUBCOMMANDS). It asks OpenBLAS
# which core it runs, so it links it.
VTPU_BENCH_SRCS := bench.c bench_gemm.c bench_peak.c bench_train.c \
	bench_stream.c bench_ops.c
VTPU_BENCH_OBJS := $(VTPU_BENCH_SRCS:%.c=$(OBJ)/tools/%.o)

$(BIN)/vtpu-bench: $(VTPU_BENCH_OBJS) $(BUILD)/lib/libvtpu.a
	@mkdir -p $(@D)
	$(call say,LD,$@)$(CC) $(LDFLAGS) -o $@ $(VTPU_BENCH_OBJS) $(LIBVTPU) \
	  $(LDLIBS_LIBVTPU) $(BLAS_LIBS)

TOOLS += $(BIN)/vtpu-smi

$(BIN)/vtpu-smi: $(OBJ)/tools/vtpu-smi.o
	@mkdir -p $(@D)
	$(call say,LD,$@)$(CC) $(LDFLAGS) -o $@ $^

# vtpu-make-image-folder: Fashion-MNIST as a folder of JPEGs (flowers'
# input, test-accuracy's JPEG check).
TOOLS += $(BIN)/vtpu-make-image-folder

$(BIN)/vtpu-make-image-folder: $(OBJ)/tools/make_image_folder.o $(LIBVTPU)
	@mkdir -p $(@D)
	$(call say,LD,$@)$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS_LIBVTPU)
