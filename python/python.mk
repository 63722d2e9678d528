# SPDX-License-Identifier: MIT
# The Python package's declarations of libvtpu (cffi's ABI mode reads them
# as text), generated from the C headers by tools/gen-cdef into
# build/python/vtpu/_cdef_gen.py: python/vtpu/_ffi.py finds them there
# from a checkout, and make install puts the module into the installed
# package. Built only when there is a $(PYTHON) (install.mk's PY_VER).
CDEF_HEADERS := vtpu.h vtpu_data.h vtpu_model.h vtpu_text.h
PY_CDEF := $(BUILD)/python/vtpu/_cdef_gen.py
PY_GEN := $(if $(PY_VER),$(PY_CDEF))

# -DVTPU_API=: the visibility attribute is no part of a declaration. The
# ioctl numbers stay out: libvtpu wraps every ioctl, and _IOC's encoding
# is the architecture's while python3-vtpu is Architecture: all.
$(PY_CDEF): $(SRCTOP)/tools/gen-cdef $(wildcard $(SRCTOP)/libvtpu/include/*.h) \
		$(SRCTOP)/uapi/linux/vtpu.h $(SRCTOP)/python/python.mk
	$(call say,GEN,$@)$(PYTHON) $< --cc '$(CC)' \
	  -I $(SRCTOP)/libvtpu/include -I $(SRCTOP)/uapi -DVTPU_API= \
	  --exclude '^VTPU_IOCTL_' -o $@ $(CDEF_HEADERS)
