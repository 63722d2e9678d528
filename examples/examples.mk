# SPDX-License-Identifier: MIT
# One readable C file per example, linked against libvtpu; the trainers
# share their command line and fit/evaluate plumbing (trainer.c).
EXAMPLES := $(BIN)/vtpu-hello $(BIN)/mnist $(BIN)/fashion_mnist $(BIN)/cifar10 \
	$(BIN)/flowers \
	$(BIN)/translate

# vtpu-hello checks its GEMM against cblas_sgemm: it links OpenBLAS (the
# trainers only load it, for --gemm openblas).
$(BIN)/vtpu-hello: $(OBJ)/examples/hello.o $(LIBVTPU)
	@mkdir -p $(@D)
	$(call say,LD,$@)$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS_LIBVTPU) $(BLAS_LIBS)

$(BIN)/%: $(OBJ)/examples/%.o $(OBJ)/examples/trainer.o $(LIBVTPU)
	@mkdir -p $(@D)
	$(call say,LD,$@)$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS_LIBVTPU)
