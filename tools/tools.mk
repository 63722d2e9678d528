# build/bin/vtpu-vm (a script), vtpu-smi, vtpu-bench.
TOOLS := $(BIN)/vtpu-vm

$(BIN)/vtpu-vm: $(SRCTOP)/tools/vtpu-vm
	@mkdir -p $(@D)
	install -m 755 $< $@
