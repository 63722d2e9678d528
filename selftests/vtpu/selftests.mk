# kselftest_harness tests (run in the guest against the real module) and
# host unit tests (the engine and libvtpu in user space). Every test is one
# C file: selftests/vtpu/NAME.c -> build/bin/selftests/NAME (guest) or
# selftests/vtpu/test_NAME.c -> build/bin/test_NAME (host).
#
# Prerequisites expand as make reads them: the top Makefile defines
# $(LIBVTPU) before including this file but $(KSFT_HDRS) after, so the
# harness headers are named by path here.
SELFTESTS := $(addprefix $(BIN)/selftests/,vtpu_basic vtpu_submit vtpu_device vtpu_train)
HOST_TESTS := $(addprefix $(BIN)/,test_engine test_data test_ops test_model)

SELFTEST_DEPS := $(LIBVTPU) $(BUILD)/kselftest/kselftest_harness.h \
	$(BUILD)/kselftest/kselftest.h

# The harness defines non-static functions and compares mixed signedness.
SELFTEST_WARN = $(WARN) -Wno-missing-prototypes -Wno-sign-compare

# Tests that read the real datasets look beside the checkout.
$(BIN)/test_data $(BIN)/selftests/vtpu_train: \
	CPPFLAGS += -DVTPU_SRCTOP='"$(SRCTOP)"'

$(BIN)/selftests/%: $(SRCTOP)/selftests/vtpu/%.c $(SELFTEST_DEPS)
	@mkdir -p $(@D)
	$(call say,CC,$@)$(CC) $(CPPFLAGS) $(KSFT_CFLAGS) $(CFLAGS) \
	  $(SELFTEST_WARN) -o $@ $< \
	  $(LIBVTPU) $(LDLIBS_LIBVTPU)

$(BIN)/test_%: $(SRCTOP)/selftests/vtpu/test_%.c $(SELFTEST_DEPS)
	@mkdir -p $(@D)
	$(call say,CC,$@)$(CC) $(CPPFLAGS) $(KSFT_CFLAGS) $(CFLAGS) \
	  $(SELFTEST_WARN) -o $@ $< \
	  $(LIBVTPU) $(LDLIBS_LIBVTPU)

# vtpu_device reads the sysfs counters with vtpu_gen.h's helper; test_engine
# checks what commands read and write on its random streams.
$(BIN)/selftests/vtpu_device $(BIN)/test_engine: \
	$(SRCTOP)/selftests/vtpu/vtpu_gen.h
# vtpu_submit calls cblas_sgemm itself (its reference): it links OpenBLAS;
# libvtpu loads it only for VTPU_CPU_GEMM_OPENBLAS.
$(BIN)/selftests/vtpu_submit: \
	LDLIBS_LIBVTPU += $(BLAS_LIBS)
# Both run vtpu_denormals.h's check: on the cpu backend, on the device.
$(BIN)/test_ops $(BIN)/selftests/vtpu_submit: \
	$(SRCTOP)/selftests/vtpu/vtpu_denormals.h

# Stress, fuzz and isolation (in the guest, like the others); the first two
# share vtpu_gen.h: random valid streams and the cpu-executor oracle.
VTPU_GEN_SELFTESTS := $(BIN)/selftests/vtpu_stress $(BIN)/selftests/vtpu_fuzz \
	$(BIN)/selftests/vtpu_isolation
SELFTESTS += $(VTPU_GEN_SELFTESTS)

$(VTPU_GEN_SELFTESTS): $(BIN)/selftests/%: $(SRCTOP)/selftests/vtpu/%.c \
		$(SRCTOP)/selftests/vtpu/vtpu_gen.h $(SELFTEST_DEPS)
	@mkdir -p $(@D)
	$(call say,CC,$@)$(CC) $(CPPFLAGS) $(KSFT_CFLAGS) $(CFLAGS) \
	  $(SELFTEST_WARN) -o $@ $< \
	  $(LIBVTPU) $(LDLIBS_LIBVTPU)
