# SPDX-License-Identifier: GPL-2.0-only
# kselftest_harness tests, run in the guest against the real module. Every
# test is one C file: selftests/vtpu/NAME.c -> build/bin/selftests/NAME.
# (The host unit tests are in libvtpu/tests/, tests.mk there; they share
# SELFTEST_DEPS and SELFTEST_WARN, and two headers, with these.)
#
# Prerequisites expand as make reads them: the top Makefile defines
# $(LIBVTPU) before including this file but $(KSFT_HDRS) after, so the
# harness headers are named by path here.
SELFTESTS := $(addprefix $(BIN)/selftests/,vtpu_basic vtpu_submit vtpu_device vtpu_observe vtpu_interop vtpu_train vtpu_smi)

SELFTEST_DEPS := $(LIBVTPU) $(BUILD)/kselftest/kselftest_harness.h \
	$(BUILD)/kselftest/kselftest.h

# The harness defines non-static functions and compares mixed signedness.
SELFTEST_WARN = $(WARN) -Wno-missing-prototypes -Wno-sign-compare

# vtpu_train reads the real datasets beside the checkout.
$(BIN)/selftests/vtpu_train: CPPFLAGS += -DVTPU_SRCTOP='"$(SRCTOP)"'

$(BIN)/selftests/%: $(SRCTOP)/selftests/vtpu/%.c $(SELFTEST_DEPS)
	@mkdir -p $(@D)
	$(call say,CC,$@)$(CC) $(CPPFLAGS) $(KSFT_CFLAGS) $(CFLAGS) \
	  $(SELFTEST_WARN) -o $@ $< \
	  $(LIBVTPU) $(LDLIBS_LIBVTPU)

# vtpu_device reads the sysfs counters with vtpu_gen.h's helper (and
# libvtpu/tests/test_engine checks what commands read and write on its
# random streams).
$(BIN)/selftests/vtpu_device: $(SRCTOP)/selftests/vtpu/vtpu_gen.h
# vtpu_observe and vtpu_interop read fdinfo with vtpu_fdinfo.h's helper.
$(BIN)/selftests/vtpu_observe $(BIN)/selftests/vtpu_interop: \
	$(SRCTOP)/selftests/vtpu/vtpu_fdinfo.h
# vtpu_submit runs vtpu_denormals.h's check on the device
# (test_ops_elementwise on the cpu backend).
$(BIN)/selftests/vtpu_submit: $(SRCTOP)/selftests/vtpu/vtpu_denormals.h
# vtpu_submit calls cblas_sgemm itself (its reference): it links OpenBLAS;
# libvtpu loads it only for VTPU_CPU_GEMM_OPENBLAS.
$(BIN)/selftests/vtpu_submit: LDLIBS_LIBVTPU += $(BLAS_LIBS)

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
