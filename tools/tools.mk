# build/bin/vtpu-vm (a script), vtpu-smi, vtpu-bench.
TOOLS := $(BIN)/vtpu-vm
TOOLS += $(BIN)/vtpu-bench

$(BIN)/vtpu-vm: $(SRCTOP)/tools/vtpu-vm
	@mkdir -p $(@D)
	install -m 755 $< $@

$(BIN)/vtpu-bench: $(SRCTOP)/tools/vtpu-bench.c $(BUILD)/lib/libvtpu.a
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) $(CFLAGS) $(WARN) -o $@ $< $(LIBVTPU) $(LDLIBS_LIBVTPU)

TOOLS += $(BIN)/vtpu-smi

$(BIN)/vtpu-smi: $(OBJ)/tools/vtpu-smi.o
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS) -o $@ $^
