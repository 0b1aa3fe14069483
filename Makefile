# kluabench: `make` builds build/kluabench (with CUDA when nvcc is found;
# CUDA=0 forces a CPU-only build), `make test` runs the busted suite,
# `make bench` runs scripts/llama4_rope.lua. `make deps` installs the Debian
# packages the build needs. BUILD=dir puts objects and the binary elsewhere.

BUILD   ?= build
CUDA    ?= $(if $(shell command -v nvcc 2>/dev/null),1,0)
NVCC    ?= nvcc
CUDA_HOME ?= $(patsubst %/bin/nvcc,%,$(shell command -v $(NVCC) 2>/dev/null))
CC      ?= cc
V       ?= 0
LIBDIR  := /usr/lib/x86_64-linux-gnu
LUAINC  := /usr/include/lua5.4
GIT_COMMIT := $(shell git rev-parse --short=12 HEAD 2>/dev/null || echo unknown)
GIT_DIRTY  := $(shell git diff --quiet HEAD 2>/dev/null || echo -dirty)

OPT      ?= -O2
SANITIZE ?=
CFLAGS  += -std=c11 $(OPT) -g -Wall -Wextra -Wshadow -Wstrict-prototypes -Wno-unused-parameter \
           -D_GNU_SOURCE -I$(LUAINC) -I$(BUILD)/gen -MMD -MP $(SANITIZE)
# Hopper machine code, Ampere machine code, and PTX for newer GPUs.
NVFLAGS ?= -O3 -std=c++17 -lineinfo -Xcompiler -Wall,-Wextra \
           -gencode arch=compute_90,code=sm_90 -gencode arch=compute_80,code=sm_80 \
           -gencode arch=compute_90,code=compute_90

# Everything but libc, libm, libstdc++ and libgcc is linked statically, so the
# binary runs where Lua, cjson, OpenSSL and libedit are not installed. -E
# exports the Lua API for C modules that busted loads at run time.
STATIC_LIBS := $(LIBDIR)/liblua5.4.a $(LIBDIR)/liblua5.4-cjson.a $(LIBDIR)/libcrypto.a \
               $(LIBDIR)/libedit.a $(LIBDIR)/libtinfo.a $(LIBDIR)/libbsd.a $(LIBDIR)/libmd.a
LDFLAGS += -Wl,-E $(SANITIZE)
LDLIBS  += $(STATIC_LIBS) -lm -ldl -lpthread

ENGINE_SRC := $(filter-out engine/backend_cuda.c,$(wildcard engine/*.c))
KERNEL_SRC := $(wildcard kernels/*_cpu.c)
CU_SRC     :=
ifeq ($(CUDA),1)
  ENGINE_SRC += engine/backend_cuda.c
  CU_SRC     := $(wildcard kernels/*.cu)
  CFLAGS     += -DKB_WITH_CUDA -I$(CUDA_HOME)/include
  LDLIBS     += -L$(CUDA_HOME)/lib64 -lcudart_static -lrt -lstdc++
endif

OBJ := $(patsubst %.c,$(BUILD)/obj/%.o,$(ENGINE_SRC) $(KERNEL_SRC)) \
       $(patsubst %.cu,$(BUILD)/obj/%.cu.o,$(CU_SRC))
BIN := $(BUILD)/kluabench

ifeq ($(V),0)
  Q = @
  say = @printf '  %-6s %s\n' $(1) $(2);
else
  Q =
  say =
endif

.PHONY: FORCE all deps test test-gpu bench bundle clean asan valgrind
all: $(BIN) bundle

# What the binary reports about its own build (kb.build_info(),
# kb.kernel_sources()); rewritten only when its content changes.
GEN := $(BUILD)/gen/build_info.h
KERNEL_FILES := $(sort $(wildcard kernels/*.cu kernels/*.c kernels/*.h))
$(GEN): FORCE
	@mkdir -p $(dir $@)
	@{ echo '#define KB_GIT_COMMIT "$(GIT_COMMIT)$(GIT_DIRTY)"'; \
	  echo '#define KB_BUILD_CFLAGS "$(OPT) $(SANITIZE)"'; \
	  echo '#define KB_BUILD_NVFLAGS "$(if $(filter 1,$(CUDA)),$(NVFLAGS))"'; \
	  echo '#define KB_BUILD_CC "$(shell $(CC) --version | head -n1)"'; \
	  echo '#define KB_BUILD_NVCC "$(if $(filter 1,$(CUDA)),$(shell $(NVCC) --version | tail -n1))"'; \
	  echo '#define KB_BUILD_TARGETS "$(if $(filter 1,$(CUDA)),sm_90 sm_80 compute_90,cpu)"'; \
	  printf '#define KB_KERNEL_SOURCES'; \
	  for f in $(KERNEL_FILES); do printf ' {"%s", "%s"},' $$f $$(sha256sum $$f | cut -c1-64); done; \
	  echo; } > $@.tmp
	@cmp -s $@.tmp $@ || mv $@.tmp $@; rm -f $@.tmp
FORCE:
$(BUILD)/obj/engine/device.o: $(GEN)

$(BIN): $(OBJ)
	$(call say,LINK,$@)$(CC) $(LDFLAGS) -o $@ $(OBJ) $(LDLIBS)

$(BUILD)/obj/%.o: %.c
	@mkdir -p $(dir $@)
	$(call say,CC,$<)$(CC) $(CFLAGS) -c -o $@ $<

$(BUILD)/obj/%.cu.o: %.cu
	@mkdir -p $(dir $@)
	$(call say,NVCC,$<)$(NVCC) $(NVFLAGS) -MMD -MP -c -o $@ $<

# busted and its pure-Lua dependencies, plus the three C modules it loads,
# copied beside the binary so that the tests run where none is installed
# (-L: Debian ships some as relative links into the 5.1 tree).
BUNDLE_LUA := busted busted.lua luassert say pl term system mediator.lua cliargs cliargs.lua dkjson.lua
BUNDLE_SO  := lfs.so term system
bundle: $(BUILD)/lua/.stamp
$(BUILD)/lua/.stamp:
	@mkdir -p $(BUILD)/lua $(BUILD)/lib
	$(call say,BUNDLE,$(BUILD)/lua)for m in $(BUNDLE_LUA); do cp -RL /usr/share/lua/5.4/$$m $(BUILD)/lua/; done; \
	  for m in $(BUNDLE_SO); do cp -RL $(LIBDIR)/lua/5.4/$$m $(BUILD)/lib/; done
	@touch $@

DEPS := liblua5.4-dev lua5.4 lua-cjson-dev lua-busted libssl-dev libedit-dev libbsd-dev libncurses-dev tmux librsvg2-bin
deps:
	@missing=$$(for p in $(DEPS); do dpkg -s $$p >/dev/null 2>&1 || echo $$p; done); \
	if [ -n "$$missing" ]; then \
	  echo "installing:" $$missing; \
	  SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
	  $$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq $$missing; \
	fi

# The test run ends with one line "N passed, N failed" (tests/run.lua).
TEST_ARGS ?=
test: deps
	@$(MAKE) --no-print-directory all
	$(BIN) tests/run.lua $(TEST_ARGS)

# On the GPU machine: build/kluabench tests/run.lua --tags=gpu (see README).
test-gpu: all
	$(BIN) tests/run.lua --tags=gpu

bench: deps
	@$(MAKE) --no-print-directory all
	$(BIN) scripts/llama4_rope.lua

clean:
	rm -rf $(BUILD)

-include $(OBJ:.o=.d)
