# kselftest_harness tests (run in the VM) and host unit tests.
#
# Prerequisites expand as make reads them: the top Makefile defines
# $(LIBVTPU) before including this file but $(KSFT_HDRS) after, so the
# harness headers are named by path here (recipes expand later and may use
# any variable).
SELFTESTS := $(BIN)/selftests/vtpu_basic $(BIN)/selftests/vtpu_submit
SELFTESTS += $(BIN)/selftests/vtpu_device
HOST_TESTS := $(BIN)/test_engine

SELFTEST_DEPS := $(LIBVTPU) $(BUILD)/kselftest/kselftest_harness.h \
	$(BUILD)/kselftest/kselftest.h

# The harness defines non-static functions and compares mixed signedness.
SELFTEST_WARN = $(WARN) -Wno-missing-prototypes -Wno-sign-compare

$(SELFTESTS): $(BIN)/selftests/%: $(SRCTOP)/selftests/vtpu/%.c $(SELFTEST_DEPS)
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) $(KSFT_CFLAGS) $(CFLAGS) $(SELFTEST_WARN) -o $@ $< \
	  $(LIBVTPU) $(LDLIBS_LIBVTPU)

# Host unit test of the engine through the cpu backend (no device needed).
$(BIN)/test_engine: $(SRCTOP)/selftests/vtpu/test_engine.c $(SELFTEST_DEPS)
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) $(KSFT_CFLAGS) $(CFLAGS) $(SELFTEST_WARN) -o $@ $< \
	  $(LIBVTPU) $(LDLIBS_LIBVTPU)

# Host unit test of the data side (datasets, batches, progress, checkpoints).
# The real datasets are looked up beside the checkout ($VTPU_DATASETS wins).
HOST_TESTS += $(BIN)/test_data

$(BIN)/test_data: $(SRCTOP)/selftests/vtpu/test_data.c $(SELFTEST_DEPS)
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) $(KSFT_CFLAGS) $(CFLAGS) $(SELFTEST_WARN) \
	  -DVTPU_SRCTOP='"$(SRCTOP)"' -o $@ $< $(LIBVTPU) $(LDLIBS_LIBVTPU)

# Host unit test of the training ops (conv, pool, elementwise, reduce,
# softmax-xent, optimizers, cast) through the cpu backend.
HOST_TESTS += $(BIN)/test_ops

$(BIN)/test_ops: $(SRCTOP)/selftests/vtpu/test_ops.c $(SELFTEST_DEPS)
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) $(KSFT_CFLAGS) $(CFLAGS) $(SELFTEST_WARN) -o $@ $< \
	  $(LIBVTPU) $(LDLIBS_LIBVTPU)
