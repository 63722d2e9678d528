# SPDX-License-Identifier: GPL-2.0-only
# The command-stream validator under libFuzzer (selftests/vtpu/fuzz_validate.c),
# included by the top Makefile. Needs clang and libclang-rt-14-dev
# (tools/install-deps).
#
#   make fuzz          fuzz for FUZZ_SECONDS (300) from the seed corpus;
#                      what it learns goes to build/fuzz/corpus, a crashing
#                      input to build/fuzz/crash-* (rerun: build/bin/fuzz_validate FILE)
#   make fuzz-smoke    the same for FUZZ_SMOKE_SECONDS (30): one TAP line
#   make fuzz-corpus   rewrite the checked-in seeds (selftests/vtpu/fuzz_corpus)
#
# The engine is compiled by clang with ASan, UBSan and libFuzzer's coverage,
# except the AVX2 and AVX-512 files (GEMM's GCC-only vector builtins, and
# per-level flags): the fuzzer runs the scalar level, and links the
# ordinary objects of those.

CLANG ?= clang
FUZZ_SECONDS ?= 300
FUZZ_SMOKE_SECONDS ?= 30
FUZZ_DIR := $(BUILD)/fuzz
FUZZ_BIN := $(BIN)/fuzz_validate
FUZZ_SEEDS := $(SRCTOP)/selftests/vtpu/fuzz_corpus
FUZZ_SAN := -fsanitize=address,undefined -fno-sanitize-recover=all
FUZZ_CFLAGS := -g -O1 -fno-omit-frame-pointer $(FUZZ_SAN)
# a unit slower than this is a hang
FUZZ_FLAGS := -timeout=20 -print_final_stats=1 -artifact_prefix=$(FUZZ_DIR)/

FUZZ_GCC_SRCS := $(filter %_avx2.c %_avx512.c,$(ENGINE_SRCS))
FUZZ_CLANG_SRCS := $(filter-out $(FUZZ_GCC_SRCS),$(ENGINE_SRCS))
FUZZ_OBJS := $(FUZZ_CLANG_SRCS:%.c=$(OBJ)/fuzz/%.o) \
	$(FUZZ_GCC_SRCS:%.c=$(OBJ)/engine/%.o)

.PHONY: fuzz fuzz-smoke fuzz-corpus

$(OBJ)/fuzz/%.o: $(SRCTOP)/kmod/engine/%.c
	@mkdir -p $(@D)
	$(call say,CLANG,$<)$(CLANG) $(CPPFLAGS) $(FUZZ_CFLAGS) \
	  -fsanitize=fuzzer-no-link $(WARN) -MMD -MP -c -o $@ $<

$(OBJ)/fuzz/fuzz_validate.o: $(SRCTOP)/selftests/vtpu/fuzz_validate.c
	@mkdir -p $(@D)
	$(call say,CLANG,$<)$(CLANG) $(CPPFLAGS) $(FUZZ_CFLAGS) \
	  -fsanitize=fuzzer-no-link $(WARN) -MMD -MP -c -o $@ $<

$(FUZZ_BIN): $(OBJ)/fuzz/fuzz_validate.o $(FUZZ_OBJS)
	@mkdir -p $(@D)
	$(call say,LD,$@)$(CLANG) $(FUZZ_CFLAGS) -fsanitize=fuzzer -o $@ $^

fuzz: $(FUZZ_BIN)
	@mkdir -p $(FUZZ_DIR)/corpus
	$(FUZZ_BIN) $(FUZZ_FLAGS) -max_total_time=$(FUZZ_SECONDS) \
	  $(FUZZ_DIR)/corpus $(FUZZ_SEEDS)

# "ok 1 - validator fuzz: N runs, no crash", or "not ok 1" and the log
fuzz-smoke: $(FUZZ_BIN)
	@mkdir -p $(FUZZ_DIR)/corpus
	@log=$(FUZZ_DIR)/smoke.log; \
	if $(FUZZ_BIN) $(FUZZ_FLAGS) -max_total_time=$(FUZZ_SMOKE_SECONDS) \
	     $(FUZZ_DIR)/corpus $(FUZZ_SEEDS) >$$log 2>&1; then \
	  runs=$$(sed -n 's/^stat::number_of_executed_units: *//p' $$log); \
	  echo "ok 1 - validator fuzz: $$runs runs, no crash"; \
	else \
	  grep -E '^(==|SUMMARY|INFO: Seed|.*runtime error)' $$log | head -40 | \
	    sed 's/^/# /'; \
	  echo "not ok 1 - validator fuzz: see $$log and $(FUZZ_DIR)/"; \
	  exit 1; \
	fi

# The seed writer: the same file with a main() instead of libFuzzer's.
$(OBJ)/fuzz/fuzz_seeds: $(SRCTOP)/selftests/vtpu/fuzz_validate.c $(LIBVTPU)
	@mkdir -p $(@D)
	$(call say,CC,$@)$(CC) $(CPPFLAGS) $(CFLAGS) $(WARN) -DFUZZ_SEEDS -o $@ $< \
	  $(LIBVTPU) $(LDLIBS_LIBVTPU)

fuzz-corpus: $(OBJ)/fuzz/fuzz_seeds
	rm -rf $(FUZZ_SEEDS)
	mkdir -p $(FUZZ_SEEDS)
	$(OBJ)/fuzz/fuzz_seeds $(FUZZ_SEEDS)
