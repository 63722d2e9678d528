# SPDX-License-Identifier: MIT
# make install / make uninstall: the library, headers, pkg-config file,
# programs, man pages, the udev rule and the module's source for DKMS, in
# the layout the Debian packages (debian/) split up. Included by Makefile.
#
#   make install [PREFIX=/usr/local] [DESTDIR=] [LIBDIR=$(PREFIX)/lib]
#                [BINDIR=$(PREFIX)/bin] [INCLUDEDIR=$(PREFIX)/include]
#                [MANDIR=$(PREFIX)/share/man]
#                [UDEVRULESDIR=/etc/udev/rules.d] [DKMS=1]
#                [PYTHONDIR=(Debian's dist-packages for PREFIX)]
#   make uninstall   (the same variables) removes exactly what install put
#
# Installing to / (no DESTDIR) also registers the module with DKMS (dkms
# add, build, install; DKMS=0 leaves that out), reloads udev's rules and
# runs ldconfig. With DESTDIR (a package's staging tree) it only copies.

PREFIX ?= /usr/local
DESTDIR ?=
LIBDIR ?= $(PREFIX)/lib
BINDIR ?= $(PREFIX)/bin
INCLUDEDIR ?= $(PREFIX)/include
MANDIR ?= $(PREFIX)/share/man
UDEVRULESDIR ?= /etc/udev/rules.d
DKMS ?= 1
# vtpu-vm's shell library (tools/vtpu-guest-lib.sh)
PKGLIBDIR := $(PREFIX)/lib/vtpu
# the module's source, where DKMS looks for it
DKMS_SRCDIR := /usr/src/vtpu-$(VTPU_VERSION)
# where DKMS keeps what it has added (dkms.conf's default)
DKMS_TREE := /var/lib/dkms

# the Python package (python/vtpu, and the declarations generated from the
# headers, python/python.mk's PY_GEN): where Debian's python3 (Makefile's
# PYTHON) looks, for PREFIX=/usr its own dist-packages, else PREFIX's
# local one (/usr/local/lib/python3.11/dist-packages); _config.py tells it
# LIBDIR
PYTHONDIR ?= $(if $(filter /usr,$(PREFIX)),/usr/lib/python3/dist-packages,$(PREFIX)/lib/python$(PY_VER)/dist-packages)
PY_FILES := $(patsubst $(SRCTOP)/python/%,%,$(wildcard $(SRCTOP)/python/vtpu/*.py \
	$(SRCTOP)/python/vtpu/*/*.py))
PY_EXAMPLES := $(wildcard $(SRCTOP)/examples/python/*.py)
EXAMPLESDIR := $(PREFIX)/share/vtpu/examples

INSTALL ?= install

# programs: build/bin name -> installed name (the trainers get a vtpu-
# prefix in a shared bin directory)
INSTALL_PROGS := vtpu-smi:vtpu-smi vtpu-bench:vtpu-bench \
	vtpu-hello:vtpu-hello vtpu-vm:vtpu-vm mnist:vtpu-mnist \
	fashion_mnist:vtpu-fashion-mnist cifar10:vtpu-cifar10 \
	translate:vtpu-translate flowers:vtpu-flowers \
	vtpu-make-image-folder:vtpu-make-image-folder
INSTALL_HEADERS := vtpu.h vtpu_model.h vtpu_data.h vtpu_text.h
MAN_PAGES := man4/vtpu.4 man1/vtpu-smi.1 man1/vtpu-vm.1 man1/vtpu-mnist.1 \
	man1/vtpu-fashion-mnist.1 man1/vtpu-cifar10.1 man1/vtpu-bench.1 \
	man1/vtpu-hello.1 man1/vtpu-translate.1 man1/vtpu-flowers.1 \
	man1/vtpu-make-image-folder.1 man3/libvtpu.3
# the module's source for DKMS: what Kbuild reads, no build products
DKMS_FILES := VERSION Kbuild $(wildcard $(SRCTOP)/dkms.conf) \
	$(wildcard $(SRCTOP)/kmod/Kbuild $(SRCTOP)/kmod/*.[ch] \
		   $(SRCTOP)/kmod/engine/*.[ch] $(SRCTOP)/kmod/engine/engine.mk \
		   $(SRCTOP)/uapi/linux/*.h)
DKMS_FILES := $(filter-out %.mod.c,$(patsubst $(SRCTOP)/%,%,$(DKMS_FILES)))

D := $(DESTDIR)

.PHONY: install uninstall install-files

$(BUILD)/lib/vtpu.pc: $(SRCTOP)/libvtpu/vtpu.pc.in $(SRCTOP)/VERSION FORCE
	@mkdir -p $(@D)
	$(call say,GEN,$@)sed -e 's|@PREFIX@|$(PREFIX)|' \
	  -e 's|@LIBDIR@|$(patsubst $(PREFIX)/%,$${prefix}/%,$(LIBDIR))|' \
	  -e 's|@INCLUDEDIR@|$(patsubst $(PREFIX)/%,$${prefix}/%,$(INCLUDEDIR))|' \
	  -e 's|@VERSION@|$(VTPU_VERSION)|' \
	  -e 's|@MPI_PC@|$(if $(filter 1,$(MPI)), ompi-c)|' \
	  $< >$@.tmp && { cmp -s $@.tmp $@ && rm -f $@.tmp || mv -f $@.tmp $@; }

install: install-files
ifeq ($(DESTDIR),)
	@if command -v ldconfig >/dev/null; then ldconfig; fi
	@if command -v udevadm >/dev/null && \
	  udevadm control --reload 2>/dev/null; then \
	  udevadm trigger --subsystem-match=vtpu; \
	else echo "vtpu: udev is not running: the rule applies from the next boot"; fi
ifeq ($(DKMS),1)
	@if ! [ -f $(DKMS_SRCDIR)/dkms.conf ]; then \
	  echo "vtpu: no dkms.conf in $(DKMS_SRCDIR): the module is not registered with DKMS (make module builds it)"; \
	elif command -v dkms >/dev/null; then \
	  if [ -e $(DKMS_TREE)/vtpu/$(VTPU_VERSION) ]; then \
	    dkms remove -m vtpu -v $(VTPU_VERSION) --all; fi && \
	  dkms add -m vtpu -v $(VTPU_VERSION) && \
	  dkms build -m vtpu -v $(VTPU_VERSION) && \
	  dkms install -m vtpu -v $(VTPU_VERSION); \
	else \
	  echo "vtpu: dkms not found: apt-get install dkms, or build the module with make module"; \
	fi
endif
	@echo "vtpu: installed. /dev/vtpuN belongs to the group 'render' (udev rule"
	@echo "  60-vtpu.rules): to use it, usermod -aG render \$$USER, then log in again."
endif

# only what is installed is built (not the tests)
install-files: $(LIBVTPU) $(LIBVTPU_SO_LINKS) $(BUILD)/lib/vtpu.pc \
		$(foreach p,$(INSTALL_PROGS),$(BIN)/$(firstword $(subst :, ,$(p)))) \
		$(PY_GEN)
	$(call say,INSTALL,$(D)$(LIBDIR))$(INSTALL) -d $(D)$(LIBDIR)/pkgconfig
	@$(INSTALL) -m 755 $(LIBVTPU_SO) $(D)$(LIBDIR)/
	@ln -sfn $(notdir $(LIBVTPU_SO)) $(D)$(LIBDIR)/$(LIBVTPU_SONAME)
	@ln -sfn $(LIBVTPU_SONAME) $(D)$(LIBDIR)/libvtpu.so
	@$(INSTALL) -m 644 $(LIBVTPU) $(D)$(LIBDIR)/
	@$(INSTALL) -m 644 $(BUILD)/lib/vtpu.pc $(D)$(LIBDIR)/pkgconfig/
	$(call say,INSTALL,$(D)$(INCLUDEDIR)/vtpu)$(INSTALL) -d \
	  $(D)$(INCLUDEDIR)/vtpu/linux
	@$(INSTALL) -m 644 $(addprefix $(SRCTOP)/libvtpu/include/,$(INSTALL_HEADERS)) \
	  $(D)$(INCLUDEDIR)/vtpu/
	@$(INSTALL) -m 644 $(SRCTOP)/uapi/linux/vtpu.h $(D)$(INCLUDEDIR)/vtpu/linux/
	$(call say,INSTALL,$(D)$(BINDIR))$(INSTALL) -d $(D)$(BINDIR) $(D)$(PKGLIBDIR)
	@set -e; for p in $(INSTALL_PROGS); do \
	  $(INSTALL) -m 755 $(BIN)/$${p%%:*} $(D)$(BINDIR)/$${p#*:}; done
	@$(INSTALL) -m 644 $(SRCTOP)/tools/vtpu-guest-lib.sh $(D)$(PKGLIBDIR)/
	$(call say,INSTALL,$(D)$(MANDIR))set -e; for m in $(MAN_PAGES); do \
	  $(INSTALL) -d $(D)$(MANDIR)/$${m%/*}; \
	  $(INSTALL) -m 644 $(SRCTOP)/docs/man/$${m#*/} $(D)$(MANDIR)/$$m; done
	$(call say,INSTALL,$(D)$(UDEVRULESDIR)/60-vtpu.rules)$(INSTALL) -d \
	  $(D)$(UDEVRULESDIR)
	@$(INSTALL) -m 644 $(SRCTOP)/kmod/60-vtpu.rules $(D)$(UDEVRULESDIR)/
	$(call say,INSTALL,$(D)$(DKMS_SRCDIR))set -e; for f in $(DKMS_FILES); do \
	  $(INSTALL) -D -m 644 $(SRCTOP)/$$f $(D)$(DKMS_SRCDIR)/$$f; done
ifneq ($(PY_VER),)
	$(call say,INSTALL,$(D)$(PYTHONDIR)/vtpu)set -e; for f in $(PY_FILES); do \
	  $(INSTALL) -D -m 644 $(SRCTOP)/python/$$f $(D)$(PYTHONDIR)/$$f; done
	@$(INSTALL) -m 644 $(PY_CDEF) $(D)$(PYTHONDIR)/vtpu/
	@printf '# SPDX-License-Identifier: MIT\n# written by make install\nLIBDIR = "%s"\n' \
	  '$(LIBDIR)' >$(D)$(PYTHONDIR)/vtpu/_config.py
	@$(INSTALL) -d $(D)$(EXAMPLESDIR)/python
	@$(INSTALL) -m 644 $(PY_EXAMPLES) $(D)$(EXAMPLESDIR)/python/
else
	@echo "vtpu: no $(PYTHON): the Python package is not installed"
endif

uninstall:
ifeq ($(DESTDIR),)
ifeq ($(DKMS),1)
	@if command -v dkms >/dev/null && \
	  [ -e $(DKMS_TREE)/vtpu/$(VTPU_VERSION) ]; then \
	  dkms remove -m vtpu -v $(VTPU_VERSION) --all; fi
endif
endif
	$(call say,RM,$(D)$(PREFIX) ...)rm -f \
	  $(D)$(LIBDIR)/$(notdir $(LIBVTPU_SO)) $(D)$(LIBDIR)/$(LIBVTPU_SONAME) \
	  $(D)$(LIBDIR)/libvtpu.so $(D)$(LIBDIR)/libvtpu.a \
	  $(D)$(LIBDIR)/pkgconfig/vtpu.pc \
	  $(addprefix $(D)$(INCLUDEDIR)/vtpu/,$(INSTALL_HEADERS) linux/vtpu.h) \
	  $(foreach p,$(INSTALL_PROGS),$(D)$(BINDIR)/$(lastword $(subst :, ,$(p)))) \
	  $(D)$(PKGLIBDIR)/vtpu-guest-lib.sh \
	  $(addprefix $(D)$(MANDIR)/,$(MAN_PAGES)) \
	  $(D)$(UDEVRULESDIR)/60-vtpu.rules
	@rm -rf $(D)$(DKMS_SRCDIR) $(D)$(PYTHONDIR)/vtpu $(D)$(EXAMPLESDIR)
	@rmdir $(D)$(INCLUDEDIR)/vtpu/linux $(D)$(INCLUDEDIR)/vtpu \
	  $(D)$(PKGLIBDIR) $(D)$(PREFIX)/share/vtpu 2>/dev/null || true
ifeq ($(DESTDIR),)
	@if command -v ldconfig >/dev/null; then ldconfig; fi
	@if command -v udevadm >/dev/null; then \
	  udevadm control --reload 2>/dev/null || true; fi
endif
