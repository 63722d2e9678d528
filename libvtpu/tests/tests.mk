# SPDX-License-Identifier: GPL-2.0-only
# Host unit tests: the engine and libvtpu in user space (the cpu backend),
# at full speed, no device needed; included by the top Makefile, which
# defines $(LIBVTPU), $(SELFTEST_DEPS) and $(SELFTEST_WARN) before (in
# selftests/vtpu/selftests.mk: these use kselftest's harness too). Every
# test is one C file: libvtpu/tests/test_NAME.c -> build/bin/test_NAME,
# which tools/run-checks runs ("$bin"/test_*).
# test_ops_*: the training ops by family (conv and pooling, element-wise,
# loss and optimizers, the sequence ops, the validator), sharing
# test_ops.h; one binary each, as the harness (6.1) registers tests in a
# per-file static list.
TEST_OPS := $(addprefix $(BIN)/test_ops_,batchnorm conv elementwise lstm seq \
	softmax train validate)
HOST_TESTS := $(addprefix $(BIN)/,test_engine test_data test_model \
	test_seq_model test_beam test_text test_imagefolder test_stream \
	test_strategy test_dist) \
	$(TEST_OPS)

# test_data reads the real datasets beside the checkout; test_imagefolder
# writes Fashion-MNIST's pictures as JPEG and PNG files.
$(BIN)/test_data $(BIN)/test_imagefolder: CPPFLAGS += -DVTPU_SRCTOP='"$(SRCTOP)"'

$(BIN)/test_%: $(SRCTOP)/libvtpu/tests/test_%.c $(SELFTEST_DEPS)
	@mkdir -p $(@D)
	$(call say,CC,$@)$(CC) $(CPPFLAGS) $(KSFT_CFLAGS) $(CFLAGS) \
	  $(SELFTEST_WARN) -o $@ $< \
	  $(LIBVTPU) $(LDLIBS_LIBVTPU)

# Headers shared with the guest selftests stay beside those (the kselftest
# copy of selftests/vtpu needs them) and are included by path: test_engine
# checks what commands read and write on vtpu_gen.h's random streams;
# test_ops_elementwise runs vtpu_denormals.h's check on the cpu backend.
$(BIN)/test_engine: $(SRCTOP)/selftests/vtpu/vtpu_gen.h
$(BIN)/test_ops_elementwise: $(SRCTOP)/selftests/vtpu/vtpu_denormals.h
$(TEST_OPS): $(SRCTOP)/libvtpu/tests/test_ops.h
$(BIN)/test_seq_model $(BIN)/test_beam: $(SRCTOP)/libvtpu/tests/test_seq.h
# image_files.h: JPEG and PNG writers, shared with tools/bench_stream.c
$(BIN)/test_imagefolder $(BIN)/test_stream: \
	$(SRCTOP)/libvtpu/tests/image_files.h
