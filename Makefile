# kluabench: `make` builds build/kluabench (with CUDA when nvcc is found;
# CUDA=0 forces a CPU-only build) and what the tests load, `make test` runs
# the busted suite, `make bench` builds the binary alone and runs
# scripts/llama4_rope.lua. `make deps` installs the Debian packages the
# build needs. BUILD=dir puts objects and the binary elsewhere.

BUILD   ?= build
CUDA    ?= $(if $(shell command -v nvcc 2>/dev/null),1,0)
NVCC    ?= nvcc
CUDA_HOME ?= $(patsubst %/bin/nvcc,%,$(shell command -v $(NVCC) 2>/dev/null))
CC      ?= cc
V       ?= 0
LIBDIR  := /usr/lib/x86_64-linux-gnu
LUAINC  := /usr/include/lua5.4
GIT_COMMIT := $(shell git rev-parse HEAD 2>/dev/null || echo unknown)
GIT_DIRTY  := $(shell git diff --quiet HEAD 2>/dev/null || echo -dirty)
# the repository records name for the built-in kernels (docs/RECORDS.md): only the characters a URL needs reach
# the recipe's shell and the C string
GIT_REMOTE := $(shell git config --get remote.origin.url 2>/dev/null | tr -cd 'A-Za-z0-9:/._@~+%=-')

OPT      ?= -O2
SANITIZE ?=
CFLAGS  += -std=c11 $(OPT) -g -Wall -Wextra -Wshadow -Wstrict-prototypes -Wno-unused-parameter \
           -D_GNU_SOURCE -I$(LUAINC) -I$(BUILD)/gen -MMD -MP $(SANITIZE)
# Hopper machine code, Ampere machine code, and PTX for newer GPUs.
NVFLAGS ?= -O3 -std=c++17 -lineinfo -Xcompiler -Wall,-Wextra \
           -gencode arch=compute_90,code=sm_90 -gencode arch=compute_80,code=sm_80 \
           -gencode arch=compute_90,code=compute_90

# Everything but libc, libm, libstdc++ and libgcc is linked statically, so the
# binary runs where Lua, cjson, OpenSSL, libedit and SQLite are not
# installed. The binary exports the Lua API, and only it
# (engine/host/exports.list), for C modules that busted loads at run time:
# libraries opened later (libpython and its extension modules, torch) must
# bind to their own OpenSSL, readline and SQLite, never to our static copies.
# libpq (PostgreSQL) and libpython are opened at run time with dlopen
# (engine/os/pq.c, engine/usercode/python_runtime.c), never linked.
STATIC_LIBS := $(LIBDIR)/liblua5.4.a $(LIBDIR)/liblua5.4-cjson.a $(LIBDIR)/libcrypto.a $(LIBDIR)/libsqlite3.a \
               $(LIBDIR)/libedit.a $(LIBDIR)/libtinfo.a $(LIBDIR)/libbsd.a $(LIBDIR)/libmd.a
LDFLAGS += -Wl,--dynamic-list=engine/host/exports.list $(SANITIZE)
LDLIBS  += $(STATIC_LIBS) -lm -ldl -lpthread

# The engine's C, one folder per role (docs/ARCHITECTURE.md): host/, core/,
# backend/, usercode/, os/. The CUDA-only files are compiled with CUDA=1 only.
ENGINE_CUDA_SRC := engine/backend/backend_cuda.c engine/backend/trace_cupti.c engine/backend/trust_cuda.c
ENGINE_SRC := $(filter-out $(ENGINE_CUDA_SRC),$(wildcard engine/*/*.c))
KERNEL_SRC := $(wildcard kernels/*_cpu.c)
CU_SRC     :=
ifeq ($(CUDA),1)
  ENGINE_SRC += $(ENGINE_CUDA_SRC)
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

.PHONY: FORCE all deps slurm-deps test test-gpu bench bundle plugins clean asan test-asan valgrind fuzz fuzz-run soak
all: $(BIN) bundle plugins

# What the binary reports about its own build (kb.build_info(),
# kb.kernel_sources()); rewritten only when its content changes.
GEN := $(BUILD)/gen/build_info.h
KERNEL_FILES := $(sort $(wildcard kernels/*.cu kernels/*.c kernels/*.h))
$(GEN): FORCE
	@mkdir -p $(dir $@)
	@{ echo '#define KB_GIT_COMMIT "$(GIT_COMMIT)$(GIT_DIRTY)"'; \
	  echo '#define KB_GIT_REMOTE "$(GIT_REMOTE)"'; \
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
$(BUILD)/obj/engine/core/device.o $(BUILD)/obj/engine/host/main.o: $(GEN)

# kb.python's glue (engine/usercode/python_glue.py) compiled in as a C string.
PY_GLUE := $(BUILD)/gen/python_glue.h
$(PY_GLUE): engine/usercode/python_glue.py
	@mkdir -p $(dir $@)
	$(call say,GEN,$@){ echo '#define KB_PYTHON_GLUE \'; \
	  sed -e 's/\\/\\\\/g' -e 's/"/\\"/g' -e 's/^/  "/' -e 's/$$/\\n" \\/' $<; echo '  ""'; } > $@.tmp && mv $@.tmp $@
$(BUILD)/obj/engine/usercode/python_runtime.o: $(PY_GLUE)

$(BIN): $(OBJ) engine/host/exports.list
	$(call say,LINK,$@)$(CC) $(LDFLAGS) -o $@ $(OBJ) $(LDLIBS)

$(BUILD)/obj/%.o: %.c
	@mkdir -p $(dir $@)
	$(call say,CC,$<)$(CC) $(CFLAGS) -c -o $@ $<

$(BUILD)/obj/%.cu.o: %.cu
	@mkdir -p $(dir $@)
	$(call say,NVCC,$<)$(NVCC) $(NVFLAGS) -MMD -MP -c -o $@ $<

# User kernels (docs/KERNELS.md): the example plugin (its CUDA entry only
# with CUDA=1), the broken plugins tests/plugin_spec.lua loads, and with
# CUDA=1 the cubin, PTX and fatbin that tests/usercode_gpu_spec.lua loads.
PLUGIN_DIR  := $(BUILD)/plugins
PLUGIN_HDR  := include/kluabench_plugin.h
TEST_PLUGINS := $(foreach v,1 2 3 4 5 6,$(PLUGIN_DIR)/libbroken$(v).so)
USERCODE    := $(if $(filter 1,$(CUDA)),$(foreach x,cubin ptx fatbin,$(BUILD)/usercode/test_kernels.$(x)))
LAUNCH_C    := $(if $(filter 1,$(CUDA)),$(BUILD)/scripts/launch_overhead_c)
# The exploit corpus (tests/exploits/, docs/TRUST.md): each plugin a .cu that
# builds with its CUDA entry under nvcc (sm_90, the H200's, only) or as C with
# its CPU twin only; the cubin_*.cu kernels as cubins (CUDA=1); nvrtc_*.cu are
# compiled by the specs at run time.
EXPLOIT_DIR   := $(BUILD)/exploits
EXPLOIT_SRC   := $(filter-out tests/exploits/nvrtc_%.cu tests/exploits/cubin_%.cu,$(wildcard tests/exploits/*.cu))
EXPLOIT_SO    := $(patsubst tests/exploits/%.cu,$(EXPLOIT_DIR)/lib%.so,$(EXPLOIT_SRC))
EXPLOIT_CUBIN := $(if $(filter 1,$(CUDA)),$(patsubst tests/exploits/cubin_%.cu,$(EXPLOIT_DIR)/%.cubin,$(wildcard tests/exploits/cubin_*.cu)))
EXPLOIT_HDR   := tests/exploits/exploit.h tests/exploits/worker.h $(PLUGIN_HDR)
# The honest corpus (tests/honest/, docs/TRUST.md): one plugin, built as the
# exploit corpus's are (its CUDA entries run ops.cuh's kernels, which the
# specs also compile with NVRTC at run time).
HONEST_SO     := $(BUILD)/honest/libhonest_ops.so
HONEST_DEP    := tests/honest/honest.cu tests/honest/ops.cuh $(PLUGIN_HDR)
plugins: $(PLUGIN_DIR)/libscale_add.so $(TEST_PLUGINS) $(USERCODE) $(LAUNCH_C) $(EXPLOIT_SO) $(EXPLOIT_CUBIN) $(HONEST_SO)

ifeq ($(CUDA),1)
$(EXPLOIT_DIR)/lib%.so: tests/exploits/%.cu $(EXPLOIT_HDR)
	@mkdir -p $(EXPLOIT_DIR)
	$(call say,PLUGIN,$@)$(NVCC) -O2 -std=c++17 -Xcompiler -fPIC,-Wall,-Wextra -gencode arch=compute_90,code=sm_90 \
	  -Iinclude -shared -o $@ $< -lpthread
else
$(EXPLOIT_DIR)/lib%.so: tests/exploits/%.cu $(EXPLOIT_HDR)
	@mkdir -p $(EXPLOIT_DIR)
	$(call say,PLUGIN,$@)$(CC) -std=c11 -O2 -fPIC -Wall -Wextra -D_GNU_SOURCE -Iinclude -x c -shared -o $@ $< -lpthread
endif
ifeq ($(CUDA),1)
$(HONEST_SO): $(HONEST_DEP)
	@mkdir -p $(dir $@)
	$(call say,PLUGIN,$@)$(NVCC) -O2 -std=c++17 -Xcompiler -fPIC,-Wall,-Wextra -gencode arch=compute_90,code=sm_90 \
	  -Iinclude -shared -o $@ $<
else
$(HONEST_SO): $(HONEST_DEP)
	@mkdir -p $(dir $@)
	$(call say,PLUGIN,$@)$(CC) -std=c11 -O2 -fPIC -Wall -Wextra -D_GNU_SOURCE -Iinclude -x c -shared -o $@ $< -lm
endif
$(EXPLOIT_DIR)/%.cubin: tests/exploits/cubin_%.cu
	@mkdir -p $(EXPLOIT_DIR)
	$(call say,NVCC,$@)$(NVCC) -cubin -arch=sm_90 -o $@ $<

# scripts/launch_overhead_user.lua's C baseline (links the driver's stub).
$(BUILD)/scripts/launch_overhead_c: scripts/launch_overhead_c.c
	@mkdir -p $(dir $@)
	$(call say,CC,$@)$(CC) -std=c11 -O2 -Wall -Wextra -D_GNU_SOURCE -I$(CUDA_HOME)/include -o $@ $< -L$(CUDA_HOME)/lib64/stubs -lcuda

ifeq ($(CUDA),1)
$(PLUGIN_DIR)/libscale_add.so: examples/plugin/scale_add.c examples/plugin/scale_add.cu $(PLUGIN_HDR)
	@mkdir -p $(PLUGIN_DIR)
	$(call say,PLUGIN,$@)$(CC) -std=c11 -O2 -fPIC -Wall -Wextra -Iinclude -DSCALE_ADD_CUDA -c -o $(PLUGIN_DIR)/scale_add_c.o examples/plugin/scale_add.c && \
	  $(NVCC) $(filter-out -lineinfo,$(NVFLAGS)) -Xcompiler -fPIC -Iinclude -shared -o $@ examples/plugin/scale_add.cu $(PLUGIN_DIR)/scale_add_c.o
else
$(PLUGIN_DIR)/libscale_add.so: examples/plugin/scale_add.c $(PLUGIN_HDR)
	@mkdir -p $(PLUGIN_DIR)
	$(call say,PLUGIN,$@)$(CC) -std=c11 -O2 -fPIC -Wall -Wextra -Iinclude -shared -o $@ $<
endif

$(PLUGIN_DIR)/libbroken%.so: tests/helpers/plugins.c $(PLUGIN_HDR)
	@mkdir -p $(PLUGIN_DIR)
	$(call say,PLUGIN,$@)$(CC) -std=c11 -fPIC -Wall -Wextra -Wno-unused-function -Iinclude -DPLUGIN_VARIANT=$* -shared -o $@ $<

USERCODE_SRC := tests/fixtures/usercode/test_kernels.cu
$(BUILD)/usercode/test_kernels.cubin: $(USERCODE_SRC)
	@mkdir -p $(dir $@)
	$(call say,NVCC,$@)$(NVCC) -cubin -arch=sm_90 -o $@ $<
$(BUILD)/usercode/test_kernels.ptx: $(USERCODE_SRC)
	@mkdir -p $(dir $@)
	$(call say,NVCC,$@)$(NVCC) -ptx -arch=compute_90 -o $@ $<
$(BUILD)/usercode/test_kernels.fatbin: $(USERCODE_SRC)
	@mkdir -p $(dir $@)
	$(call say,NVCC,$@)$(NVCC) -fatbin -gencode arch=compute_90,code=sm_90 -gencode arch=compute_80,code=sm_80 \
	  -gencode arch=compute_90,code=compute_90 -o $@ $<

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

# python3-numpy and libpython3-dev: tests/python_spec.lua runs kb.python on /usr/bin/python3 with NumPy;
# libpython3-dev is Debian's one package that depends on the default version's shared libpython (which
# kb.python opens at run time); no Python header is used to build.
DEPS := liblua5.4-dev lua5.4 lua-cjson-dev lua-busted libssl-dev libedit-dev libbsd-dev libncurses-dev tmux librsvg2-bin \
        clang libclang-rt-dev valgrind python3-jsonschema libsqlite3-dev libpq5 postgresql chromium \
        python3-numpy libpython3-dev
deps:
	@missing=$$(for p in $(DEPS); do dpkg -s $$p >/dev/null 2>&1 || echo $$p; done); \
	if [ -n "$$missing" ]; then \
	  echo "installing:" $$missing; \
	  SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
	  $$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq $$missing; \
	  case " $$missing " in *" postgresql "*) \
	    $$SUDO pg_lsclusters -h 2>/dev/null | while read -r v c _; do $$SUDO pg_ctlcluster "$$v" "$$c" stop 2>/dev/null || true; done; \
	    if command -v systemctl >/dev/null && [ -d /run/systemd/system ]; then $$SUDO systemctl disable --now postgresql >/dev/null 2>&1 || true; fi;; \
	  esac; \
	fi
# (tests/history_pg_spec.lua starts a PostgreSQL server of its own on a Unix
# socket in a temporary folder and stops it: the cluster that installing
# postgresql may start is stopped above, so that nothing is left running.)

# Slurm for tests/slurm_spec.lua, which starts a single-node cluster of its
# own (tests/slurm/cluster.sh) and submits a real job array; without these
# packages (or without root) that spec is skipped and says why.
# Where the packages were missing, the services their installation may have
# started (munge, slurmctld, slurmd under systemd) are stopped and disabled:
# the spec runs daemons of its own and leaves nothing running.
SLURM_DEPS := slurm-wlm munge
slurm-deps:
	@missing=$$(for p in $(SLURM_DEPS); do dpkg -s $$p >/dev/null 2>&1 || echo $$p; done); \
	if [ -n "$$missing" ]; then \
	  echo "installing:" $$missing; \
	  SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
	  $$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq $$missing; \
	  if command -v systemctl >/dev/null && [ -d /run/systemd/system ]; then \
	    $$SUDO systemctl disable --now munge slurmctld slurmd >/dev/null 2>&1 || true; \
	  fi; \
	fi

# The test run ends with one line "N passed, N failed" (tests/run.lua).
TEST_ARGS ?=
# KLUABENCH_RESULTS: what a test's script writes to its default results
# folder goes to a temporary one, never into the source tree.
test: deps
	@$(MAKE) --no-print-directory all
	@results=$$(mktemp -d) && KLUABENCH_RESULTS=$$results $(BIN) tests/run.lua $(TEST_ARGS); rc=$$?; rm -rf "$$results"; exit $$rc

# On the GPU machine: build/kluabench tests/run.lua --tags=gpu (see README).
test-gpu: all
	$(BIN) tests/run.lua --tags=gpu

# The benchmark needs the binary alone: the plugins, the exploit and honest
# corpora, the cubins and busted are the tests' (make test builds them). It
# builds on every core unless make was given -j (the first number in under a
# minute on 2 cores from a clean clone).
bench: deps
	@$(MAKE) --no-print-directory $(if $(findstring -j,$(MAKEFLAGS)),,-j$(shell nproc)) $(BIN)
	$(BIN) scripts/llama4_rope.lua

# ---- Reliability (docs/RELIABILITY.md): sanitizers, valgrind, fuzzing, soak ----

# `make asan`: the host with AddressSanitizer and UndefinedBehaviorSanitizer
# in build-asan (CPU only). `make test-asan`: the whole CPU suite under it.
# The suite starts the binary again as a subprocess, so every process writes
# its reports to build-asan/reports/ (ASan's log_path) and the target fails
# when one holds an error, even where a test did not look at the exit status.
ASAN_BUILD := build-asan
ASAN_FLAGS := -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined
ASAN_ENV    = LSAN_OPTIONS=suppressions=$(CURDIR)/tests/lsan_python.supp ASAN_OPTIONS=detect_leaks=1:allocator_may_return_null=1:check_initialization_order=1:strict_string_checks=1:log_path=$(CURDIR)/$(ASAN_BUILD)/reports/asan \
              UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1:log_path=$(CURDIR)/$(ASAN_BUILD)/reports/ubsan
asan:
	@$(MAKE) --no-print-directory BUILD=$(ASAN_BUILD) CUDA=0 OPT=-O1 SANITIZE='$(ASAN_FLAGS)' all

test-asan: deps asan
	@rm -rf $(ASAN_BUILD)/reports && mkdir -p $(ASAN_BUILD)/reports
	@$(ASAN_ENV) $(ASAN_BUILD)/kluabench tests/run.lua $(TEST_ARGS); status=$$?; \
	if grep -lE 'ERROR: |runtime error|SUMMARY: ' $(ASAN_BUILD)/reports/* 2>/dev/null; then \
	  echo "test-asan: sanitizer reports above (in $(ASAN_BUILD)/reports/)"; status=1; \
	  grep -hE -A25 'ERROR: |runtime error' $(ASAN_BUILD)/reports/* | head -n 120; \
	else echo "test-asan: no sanitizer report"; fi; exit $$status

# `make valgrind`: the core specs under memcheck, CPU-only build in
# build-valgrind; any error, or a definite leak, fails it (about 5 minutes on
# 2 cores; subprocesses the specs start run without valgrind).
VALGRIND_BUILD := build-valgrind
VALGRIND_SPECS ?= tests/tensor_spec.lua tests/jcs_spec.lua tests/digest_spec.lua tests/rope_spec.lua \
                  tests/stats_spec.lua tests/record_spec.lua tests/verify_spec.lua tests/timing_spec.lua \
                  tests/reliability_spec.lua tests/fuzz_spec.lua
VALGRIND_FLAGS ?= -q --error-exitcode=99 --leak-check=full --errors-for-leak-kinds=definite \
                  --show-leak-kinds=definite
valgrind: deps
	@$(MAKE) --no-print-directory BUILD=$(VALGRIND_BUILD) CUDA=0 all
	valgrind $(VALGRIND_FLAGS) $(VALGRIND_BUILD)/kluabench tests/run.lua $(VALGRIND_SPECS)

# `make fuzz`: libFuzzer targets (clang) in build-fuzz, the engine built with
# ASan and UBSan: fuzz_jcs (kb.jcs and the stdlib JSON reader), fuzz_csv
# (the Liger CSV importer), fuzz_records (the reader of record files, and
# compare and plot on what it accepts), fuzz_merge (merge's manifest check
# and shard reader), fuzz_samples (the record reader as verify runs it, with
# the samples file beside: the samples index, verify.problems) and
# fuzz_history (history add into an in-memory SQLite database).
# `make fuzz-run FUZZ_SECONDS=60` runs
# each for that long, all at once, from the seed corpora in tests/fuzz/corpus/; what
# they find lands in build-fuzz/crashes/, to be kept as a regression input in
# tests/fuzz/regressions/<target>/ (tests/fuzz_spec.lua replays those).
FUZZ_BUILD   := build-fuzz
FUZZ_CC      ?= clang
FUZZ_TARGETS := jcs csv records merge samples history
FUZZ_SECONDS ?= 60
# -detect_leaks=0: the Lua heap frees on its own schedule, so nearly every
# input looks like a leak to libFuzzer, whose leak scan per input made the
# runs 18 times slower; leaks are test-asan's (LSan) and valgrind's job.
FUZZ_FLAGS   ?= -timeout=20 -rss_limit_mb=2048 -max_len=16384 -detect_leaks=0 -print_final_stats=1
fuzz: deps
	@$(MAKE) --no-print-directory BUILD=$(FUZZ_BUILD) CUDA=0 CC=$(FUZZ_CC) OPT=-O1 \
	  SANITIZE='-fsanitize=fuzzer-no-link,address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined' \
	  $(foreach t,$(FUZZ_TARGETS),$(FUZZ_BUILD)/fuzz_$(t))

$(BUILD)/obj/tests/fuzz/%.o: CFLAGS += -DKB_SOURCE_ROOT='"$(CURDIR)"'
.PRECIOUS: $(BUILD)/obj/tests/fuzz/%.o
$(BUILD)/fuzz_%: $(BUILD)/obj/tests/fuzz/fuzz_%.o $(filter-out %/engine/host/main.o %/engine/host/repl.o,$(OBJ))
	$(call say,LINK,$@)$(CC) $(LDFLAGS) -fsanitize=fuzzer -o $@ $^ $(LDLIBS)

fuzz-run: fuzz
	@mkdir -p $(FUZZ_BUILD)/crashes; pids=; status=0; \
	for t in $(FUZZ_TARGETS); do \
	  mkdir -p $(FUZZ_BUILD)/corpus/$$t; \
	  $(FUZZ_BUILD)/fuzz_$$t -max_total_time=$(FUZZ_SECONDS) $(FUZZ_FLAGS) \
	    -dict=tests/fuzz/$$t.dict -artifact_prefix=$(FUZZ_BUILD)/crashes/$$t- \
	    $(FUZZ_BUILD)/corpus/$$t tests/fuzz/corpus/$$t \
	    > $(FUZZ_BUILD)/fuzz_$$t.log 2>&1 & pids="$$pids $$!"; \
	done; \
	for p in $$pids; do wait $$p || status=1; done; \
	for t in $(FUZZ_TARGETS); do \
	  printf 'fuzz_%s: %s runs, %s corpus files, %s\n' $$t \
	    "$$(sed -n 's/^stat::number_of_executed_units: *//p' $(FUZZ_BUILD)/fuzz_$$t.log)" \
	    "$$(ls $(FUZZ_BUILD)/corpus/$$t | wc -l)" \
	    "$$(grep -q 'ERROR\|Assertion\|oracle:' $(FUZZ_BUILD)/fuzz_$$t.log && echo FAILED || echo ok)"; \
	done; \
	if [ $$status != 0 ]; then \
	  for t in $(FUZZ_TARGETS); do grep -B2 -A30 'ERROR\|oracle:' $(FUZZ_BUILD)/fuzz_$$t.log | head -n 60; done; \
	  echo "fuzz-run: inputs that fail are in $(FUZZ_BUILD)/crashes/; copy each into"; \
	  echo "tests/fuzz/regressions/<target>/ and fix the bug (tests/fuzz_spec.lua replays them)"; \
	fi; exit $$status

# `make soak`: the llama4_rope sweep repeated in one process for SOAK_SECONDS
# with host (and device) memory sampled per round; fails when memory grows
# (scripts/soak.lua --help). CI runs the short CPU one.
SOAK_SECONDS ?= 60
SOAK_ARGS    ?= --backend cpu
SOAK_SWEEP   ?= --sweep hidden --seq 256 --rep-ms 5 --warmup-ms 1
soak: all
	$(BIN) $(SOAK_ARGS) scripts/soak.lua --seconds $(SOAK_SECONDS) $(SOAK_SWEEP)

clean:
	rm -rf $(BUILD)

-include $(OBJ:.o=.d) $(wildcard $(BUILD)/obj/tests/fuzz/*.d)
