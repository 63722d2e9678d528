# One readable C file per example, each linked against libvtpu.
EXAMPLES := $(BIN)/vtpu-hello

$(BIN)/vtpu-hello: $(OBJ)/examples/hello.o $(LIBVTPU)
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS_LIBVTPU)
