# sandbox: build, test, demo and quality targets.
#   make            build build/sandbox/core.so (-Wall -Wextra -Werror) and the document helper beside it
#   make test       the busted suite (what scripts/test.sh runs after set-up)
#   make asan       the suite with AddressSanitizer + UBSan, leak detection on
#   make valgrind   the suite under valgrind memcheck
#   make race       the long rename-exchange race run (RACE_ROUNDS=20000)
#   make fuzz       build the libFuzzer targets and run each for FUZZ_TIME seconds
#   make coverage   line and branch coverage of csrc/ from the suite (gcovr)
#   make docs       types/sandbox.lua (LuaCATS) and docs/API.md's option tables from the option schemas; make docs-check: no drift
#   make format     clang-format the C core (.clang-format); make format-check: it is formatted
#   make lint       luacheck over the Lua layer, the command line and the specs (.luacheckrc)
#   make test-fresh the README's test command in a fresh clone of HEAD (a missing install step shows)
#   make static     build/libsandbox.a for hosts linking statically (also built by make)
#   make embed      run the embedding example (examples/embed)
#   make bench      the benchmarks of SPEC §10 against their baselines (bench/out/)
#   make demo       the agent demo
#   make nvim       the module for Neovim's LuaJIT, put where Neovim finds it (lua/sandbox/core.so): the plugin's build step

LUA      ?= lua5.4
# The interpreter picks the headers (SPEC §14): lua5.4, lua5.3, lua5.1 or
# luajit; every version but 5.4 builds in its own tree (build-luajit, ...).
LUA_PKG  := $(if $(filter luajit,$(LUA)),luajit,$(LUA))
LUA_INC  ?= $(shell pkg-config --cflags $(LUA_PKG) 2>/dev/null || echo -I/usr/include/$(LUA_PKG))
LUA_LIB  ?= $(shell pkg-config --libs $(LUA_PKG) 2>/dev/null || echo -l$(LUA_PKG))
CC       ?= cc
# PORTABLE=1: the module without Linux's layers (openat2, namespaces,
# seccomp, Landlock, cgroups, pidfds, the network agent): the code paths of
# macOS and the BSDs, built and run by the suite here (build-portable).
PORTABLE ?=
# The system the module is for (make cross: Darwin). Off Linux there are no
# Linux layers either; on macOS the module leaves Lua's C API to the host
# that loads it, as Lua modules do there.
TARGET_OS ?= $(shell uname -s)
NO_LINUX_LAYERS := $(if $(PORTABLE),1,$(filter-out Linux,$(TARGET_OS)))
MODULE_LDFLAGS := $(if $(filter Darwin,$(TARGET_OS)),-undefined dynamic_lookup)
BUILD    ?= $(if $(PORTABLE),build-portable,build)$(if $(filter lua5.4,$(LUA)),,-$(LUA))
OPT      ?= -O2
SANFLAGS ?=
CFLAGS_BASE = -std=c11 -D_GNU_SOURCE $(OPT) -g -fPIC -fvisibility=hidden \
              -Wall -Wextra -Werror -Wshadow -Wstrict-prototypes -Wno-unused-parameter
CFLAGS   += $(CFLAGS_BASE) -Icsrc $(LUA_INC) $(SANFLAGS)$(if $(PORTABLE), -DSB_PORTABLE)
# The shared module links Debian's libuv.so. The static library carries its
# own copy of libuv from Debian's archive (not PIC, so not in the .so), with
# every uv_* symbol made local: a host with its own libuv never clashes.
MULTIARCH := $(shell $(CC) -print-multiarch 2>/dev/null)
UV_STATIC ?= $(firstword $(wildcard /usr/lib/$(MULTIARCH)/libuv_a.a /usr/lib/$(MULTIARCH)/libuv.a))
UV_LINK := -luv -lcurl -lpcre2-8 -lssl -lcrypto -lpthread

# The C core, one folder per part (see the README's Architecture): the front
# door (base), file-system backends (fs), commands (exec), confinement,
# network, search, review (diffs), and the Lua binding (lua).
PARTS := base audit fs exec confine net remote search review lua
# Linux's layers, and what stands for them on a system without (SPEC §19)
LINUX_ONLY := $(addprefix csrc/confine/,linux.c child.c cgroup.c landlock.c seccomp.c ns.c init_program.c rules.c netns.c) \
              csrc/net/agent.c csrc/exec/zygote.c csrc/exec/zygote_program.c
NO_LINUX := csrc/confine/none.c csrc/net/agent_none.c csrc/exec/zygote_none.c
# the mount view's code runs in the init program alone (INIT_SRC below)
INIT_ONLY := csrc/confine/view.c csrc/confine/view_keep.c
SRC := $(filter-out $(INIT_ONLY) $(if $(NO_LINUX_LAYERS),$(LINUX_ONLY),$(NO_LINUX)),$(foreach d,$(PARTS),$(wildcard csrc/$(d)/*.c)))
# The zygote program (csrc/zygote/, exec/zygote.h), built apart (no
# sanitizer: it is a process of its own) and carried in the module as bytes
# (exec/zygote_program.c).
ZYGOTE_SRC := csrc/zygote/main.c csrc/exec/spawn_child.c csrc/confine/child.c csrc/base/child.c
ZYGOTE_BIN := $(BUILD)/zygote/sandbox-spawn
# The init program (csrc/init/, confine/ns.h): pid 1 of a sandbox's
# namespaces and the keeper of its mount view, likewise a process of its own
# carried as bytes (confine/init_program.c). Static and built with musl
# where there is musl-gcc: no loader and no libc start-up to run before it
# builds the view (glibc's, here, about 0.3 ms more before main).
INIT_SRC := csrc/init/main.c $(INIT_ONLY) csrc/confine/netns.c csrc/confine/system.c \
            csrc/base/child.c csrc/base/file.c
INIT_CC ?= $(or $(shell command -v musl-gcc 2>/dev/null),$(CC))
INIT_BIN := $(BUILD)/init/sandbox-init
OBJ := $(patsubst csrc/%.c,$(BUILD)/obj/%.o,$(SRC))
DEP := $(OBJ:.o=.d)
MODULE := $(BUILD)/sandbox/core.so

# --ignore-lua: run in this process (.busted names lua5.4 for plain `busted`),
# so sanitizers and valgrind see the suite itself, not a re-exec.
BUSTED := $(LUA) /usr/bin/busted --ignore-lua
export SANDBOX_BUILD := $(abspath $(BUILD))
export SANDBOX_LUA := $(LUA)

.PHONY: cross nvim format format-check docs types docs-check lint all module install static embed test test-fresh asan valgrind demo race difftest fuzz fuzz-build coverage bench bench-build clean
all: $(MODULE)
module: $(MODULE)

# Neovim loads C modules from lua/<name>.so on its runtimepath: the plugin
# manager's build step (lazy.nvim: build = "make nvim"). Copied, then
# renamed, so a Neovim running meanwhile never loads half a file.
nvim:
	@if ! pkg-config --exists luajit 2>/dev/null && [ ! -f /usr/include/luajit-2.1/lua.h ]; then \
	  echo "make nvim: LuaJIT's headers are missing (apt-get install libluajit-5.1-dev)"; exit 1; fi
	$(MAKE) LUA=luajit module $(if $(DOC_HAVE),build-luajit/sandbox/sandbox-docparse build-luajit/sandbox/sandbox-docrender)
	cp build-luajit/sandbox/core.so lua/sandbox/.core.so.$$$$ && mv lua/sandbox/.core.so.$$$$ lua/sandbox/core.so
	$(if $(DOC_HAVE),for h in docparse docrender; do cp build-luajit/sandbox/sandbox-$$h lua/sandbox/.$$h.$$$$ && mv lua/sandbox/.$$h.$$$$ lua/sandbox/sandbox-$$h; done)

$(BUILD)/obj/%.o: csrc/%.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -MMD -MP -c $< -o $@

%/zygote/sandbox-spawn: $(ZYGOTE_SRC) $(wildcard csrc/exec/*.h csrc/confine/*.h csrc/base/*.h csrc/plat/*.h)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_BASE) -Icsrc -s -o $@ $(ZYGOTE_SRC)
$(BUILD)/obj/exec/zygote_program.o: $(ZYGOTE_BIN)
$(BUILD)/obj/exec/zygote_program.o: CFLAGS += -DSB_ZYGOTE_PROGRAM='"$(abspath $(ZYGOTE_BIN))"'
%/init/sandbox-init: $(INIT_SRC) $(wildcard csrc/confine/*.h csrc/base/*.h csrc/plat/*.h)
	@mkdir -p $(dir $@)
	$(INIT_CC) $(CFLAGS_BASE) -Icsrc -static -s -o $@ $(INIT_SRC)
$(BUILD)/obj/confine/init_program.o: $(INIT_BIN)
$(BUILD)/obj/confine/init_program.o: CFLAGS += -DSB_INIT_PROGRAM='"$(abspath $(INIT_BIN))"'

# The remote commands' engine-side helper (csrc/rtree/, remote/helper.h):
# a static program for the engine, built with musl (small: its bytes are
# uploaded once per sandbox) for this machine's architecture, and carried
# in the module as bytes (remote/rtree_program.c). Without musl-gcc, or
# for another system, none is carried and remote commands keep the sh
# wrapper.
RTREE_CC ?= $(shell command -v musl-gcc 2>/dev/null)
RTREE_BIN := $(if $(and $(RTREE_CC),$(filter Linux,$(TARGET_OS))),$(BUILD)/rtree/sandbox-rtree)
%/rtree/sandbox-rtree: csrc/rtree/main.c csrc/remote/tree_proto.h
	@mkdir -p $(dir $@)
	$(RTREE_CC) -std=c11 -D_GNU_SOURCE -Os -Wall -Wextra -Werror -Wshadow -Wstrict-prototypes -Icsrc -static -s \
	  -ffunction-sections -fdata-sections -Wl,--gc-sections -Wl,-z,noseparate-code -Wl,--build-id=none -o $@ $<
$(BUILD)/obj/remote/rtree_program.o: $(RTREE_BIN)
$(BUILD)/obj/remote/rtree_program.o: CFLAGS += $(if $(RTREE_BIN),-DSB_RTREE_PROGRAM='"$(abspath $(RTREE_BIN))"')

$(MODULE): $(OBJ)
	@mkdir -p $(dir $@)
	$(CC) -shared $(SANFLAGS) -o $@ $(OBJ) $(LDFLAGS) $(MODULE_LDFLAGS) $(UV_LINK)

-include $(DEP)

# The module for macOS on x86_64 and arm64 (SPEC §19), built here with Zig's
# clang and the macOS headers it ships (scripts/cross.sh: npm, into
# build/zig) from the portable sources (no Linux layers): a Mach-O bundle in
# build-<target>/sandbox/core.so for Lua 5.4 and build-<target>-luajit/ for
# Neovim. A check that the sources compile and link for macOS: there are no
# macOS builds of libuv, PCRE2, libcurl and OpenSSL here to link, so their
# symbols are left to the loader too; on a Mac the rock builds the module
# with the platform's compiler and Homebrew's libraries.
CROSS_TARGETS ?= x86_64-macos aarch64-macos
cross:
	@zig=$$(bash scripts/cross.sh) && inc=$(abspath build/cross-include) && \
	for t in $(CROSS_TARGETS); do for l in lua5.4 luajit; do \
	  b=build-$$t$$( [ $$l = luajit ] && echo -luajit ); \
	  $(MAKE) --no-print-directory module PORTABLE=1 LUA=$$l BUILD=$$b CC="$(abspath .)/$$zig cc -target $$t" \
	    LUA_INC="-I$$inc/$$( [ $$l = luajit ] && echo luajit-2.1 || echo lua5.4 ) -I$$inc" \
	    TARGET_OS=Darwin UV_LINK= || exit 1; \
	  file $$b/sandbox/core.so; \
	done; done

# The static library for embedding hosts: the C core, the Lua layer compiled
# in (scripts/embed-lua.lua), the needed libuv objects, one relocatable object
# whose only global symbols are the public API of csrc/sandbox.h.
STATIC_LIB  := $(BUILD)/libsandbox.a
LUA_LAYER   := $(shell find lua -name '*.lua' | LC_ALL=C sort)
STATIC_OBJ  := $(BUILD)/obj/static/sandbox_static.o $(BUILD)/obj/static/lua_layer.o
PUBLIC_SYMS := luaopen_sandbox luaopen_sandbox_core sandbox_preload sandbox_set_error_handler
$(BUILD)/gen/lua_layer.c: $(LUA_LAYER) scripts/embed-lua.lua
	@mkdir -p $(dir $@)
	$(LUA) scripts/embed-lua.lua $@ lua $(LUA_LAYER)
$(BUILD)/obj/static/lua_layer.o: $(BUILD)/gen/lua_layer.c csrc/static/lua_layer.h
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -Icsrc/static -c $< -o $@
$(BUILD)/obj/static/%.o: csrc/static/%.c csrc/static/lua_layer.h csrc/sandbox.h
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -Icsrc -Icsrc/static -c $< -o $@
$(STATIC_LIB): $(OBJ) $(STATIC_OBJ)
	$(CC) -r -nostdlib -o $(BUILD)/sandbox-all.o $(OBJ) $(STATIC_OBJ) $(UV_STATIC)
	objcopy $(addprefix --keep-global-symbol=,$(PUBLIC_SYMS)) $(BUILD)/sandbox-all.o
	rm -f $@ && ar rcs $@ $(BUILD)/sandbox-all.o
static: $(STATIC_LIB)
all: $(STATIC_LIB)

# The document helpers (csrc/doc/): PDF, Office files and images are
# parsed in these separate programs, which the Lua layer runs confined
# (sandbox.docparse); they go beside core.so, where the Lua layer looks for
# them. sandbox-docparse reads Office files (libzip, expat); sandbox-docrender
# PDF and images (Poppler, cairo, gdk-pixbuf), whose libraries an Office
# read need not load. Without their libraries the module still builds, and
# read_document says what is missing.
OFFICE_PKGS := libzip expat
RENDER_PKGS := poppler-glib cairo gdk-pixbuf-2.0
DOC_PKGS := $(OFFICE_PKGS) $(RENDER_PKGS)
DOC_COMMON := csrc/doc/main.c csrc/doc/out.c csrc/base/utf8.c
OFFICE_SRC := csrc/doc/office_kinds.c csrc/doc/zip.c csrc/doc/docx.c csrc/doc/pptx.c csrc/doc/xlsx.c
RENDER_SRC := csrc/doc/render_kinds.c csrc/doc/pdf.c csrc/doc/image.c
DOCPARSE := $(BUILD)/sandbox/sandbox-docparse
DOCRENDER := $(BUILD)/sandbox/sandbox-docrender
DOC_HAVE := $(shell pkg-config --exists $(DOC_PKGS) 2>/dev/null && echo yes)
DOC_WANT := $(if $(DOC_HAVE),$(DOCPARSE) $(DOCRENDER),docparse-missing)
$(DOCPARSE): $(DOC_COMMON) $(OFFICE_SRC) $(wildcard csrc/doc/*.h)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_BASE) -Icsrc $$(pkg-config --cflags $(OFFICE_PKGS)) -o $@ $(filter %.c,$^) $$(pkg-config --libs $(OFFICE_PKGS))
$(DOCRENDER): $(DOC_COMMON) $(RENDER_SRC) $(wildcard csrc/doc/*.h)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_BASE) -Icsrc $$(pkg-config --cflags $(RENDER_PKGS)) -o $@ $(filter %.c,$^) $$(pkg-config --libs $(RENDER_PKGS))
.PHONY: docparse-missing
docparse-missing:
	@echo "note: the document helpers are not built (PDF and Office files unread): apt-get install libpoppler-glib-dev libzip-dev libexpat1-dev libgdk-pixbuf-2.0-dev"
all: $(DOC_WANT)

# Hosts linking it: the embed example and the two-threads test.
EMBED_LIBS := $(STATIC_LIB) -lcurl -lpcre2-8 -lssl -lcrypto $(LUA_LIB) -lm -lpthread -ldl $(if $(UV_STATIC),,-luv)
$(BUILD)/examples/embed-host: examples/embed/host.c examples/embed/capped_alloc.h $(STATIC_LIB)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -Icsrc -o $@ $< $(EMBED_LIBS)
$(BUILD)/test/two_states: spec/c/two_states.c $(STATIC_LIB)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -Icsrc -o $@ $< $(EMBED_LIBS)
$(BUILD)/test/httpd: spec/c/httpd.c
	@mkdir -p $(dir $@)
	$(CC) -O2 -Wall -Wextra -Werror -o $@ $<
all: $(BUILD)/examples/embed-host $(BUILD)/test/two_states $(BUILD)/test/httpd
embed: $(BUILD)/examples/embed-host
	$(BUILD)/examples/embed-host examples/embed/game.lua 64

# C test hosts used by the specs
TESTBIN := $(BUILD)/test/alloc_cap $(BUILD)/test/mksock $(BUILD)/test/swapper $(BUILD)/test/probe \
           $(BUILD)/test/attack $(BUILD)/test/no_ns $(BUILD)/test/seccomp_eval \
           $(BUILD)/test/json_echo $(BUILD)/test/remote_probe
$(BUILD)/test/%: spec/c/%.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -Iexamples/embed -o $@ $< $(LUA_LIB) -lm
# run inside confined sandboxes, or as test hosts: no sanitizer runtime
$(BUILD)/test/probe $(BUILD)/test/attack $(BUILD)/test/no_ns: $(BUILD)/test/%: spec/c/%.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_BASE) -o $@ $<
# the seccomp filter builder, evaluated off the kernel
$(BUILD)/test/seccomp_eval: spec/c/seccomp_eval.c csrc/confine/seccomp.c csrc/confine/seccomp.h
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -Icsrc -o $@ spec/c/seccomp_eval.c csrc/confine/seccomp.c
# the remote protocol's JSON and base64, checked against Node's
$(BUILD)/test/json_echo: spec/c/json_echo.c csrc/remote/json.c csrc/remote/json_write.c csrc/remote/json.h \
                         csrc/base/mem.c csrc/base/err.c csrc/base/utf8.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -Icsrc -o $@ $(filter %.c,$^) $(LUA_LIB)
# the remote engine's client, against the E2B test peer
$(BUILD)/test/remote_probe: spec/c/remote_probe.c csrc/remote/client.c csrc/remote/connect.c csrc/remote/control.c \
                            csrc/remote/envd.c csrc/remote/process.c csrc/remote/json.c csrc/remote/json_write.c \
                            csrc/base/mem.c csrc/base/err.c csrc/base/utf8.c $(wildcard csrc/remote/*.h) csrc/remote/json.h
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -Icsrc -o $@ $(filter %.c,$^) $(LUA_LIB) -lcurl -lm
all: $(TESTBIN)

# PORTABLE=1: the suite against the build without Linux's layers. Its
# commands run unconfined (SANDBOX_TEST_UNCONFINED, as under valgrind: the
# specs of confinement and attacks say why they do not run) with the host's
# network (spec/support/unlayered.lua, also in every Lua host a spec starts),
# so the run itself is kept in namespaces of its own: a private /dev/shm
# (where the test directories are), its own hostname and PIDs (a shell as
# their init reaps orphans). /tmp stays the host's: the run's counts go there.
PORTABLE_RUN = unshare --mount --uts --ipc --pid --fork --kill-child --mount-proc \
  $(if $(filter 0,$(shell id -u)),,--map-root-user) sh -c \
  'mount -t tmpfs -o mode=1777 tmpfs /dev/shm && "$$@"' sh \
  env SANDBOX_TEST_UNCONFINED=1 LUA_INIT_5_4=@$(abspath spec/support/unlayered.lua)
test: $(MODULE) $(TESTBIN) $(DOC_WANT)
	bash scripts/npm-deps.sh
	$(if $(PORTABLE),$(PORTABLE_RUN)) $(BUSTED) $(BUSTED_ARGS)

# The README's test command where nothing of this tree's builds, npm modules
# or untracked files helps: a clone of HEAD in a temporary directory.
test-fresh:
	@tmp=$$(mktemp -d) && chmod 755 "$$tmp" && trap 'rm -rf "$$tmp"' EXIT && \
	git clone -q "$(CURDIR)" "$$tmp/sandbox" && cd "$$tmp/sandbox" && \
	echo "make test-fresh: bash scripts/test.sh in $$tmp/sandbox ($$(git log -1 --format=%h))" && \
	bash scripts/test.sh

ASAN_LIB = $(shell $(CC) -print-file-name=libasan.so)
# intercept_tls_get_addr=0: LSan's exit scan crashed ("Tracer caught signal
# 11") on a bogus dynamic-TLS range it had recorded for a dlopen'ed library
# whose TLS block was made right after one of alloc_spec's failed
# allocations (glibc 2.36, gcc 12's libasan); leaks are still found (the
# heap is scanned), and alloc_spec counts every byte itself.
asan:
	$(MAKE) BUILD=build-asan all OPT=-O1 SANFLAGS="-fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined"
	bash scripts/npm-deps.sh
	SANDBOX_BUILD=$(abspath build-asan) LD_PRELOAD=$(ASAN_LIB) SANDBOX_LUA_PRELOAD=$(ASAN_LIB) \
	ASAN_OPTIONS=detect_leaks=1:abort_on_error=0:detect_stack_use_after_return=0:intercept_tls_get_addr=0 \
	LSAN_OPTIONS=suppressions=$(abspath spec/support/lsan.supp):print_suppressions=0 \
	UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 SANDBOX_STREAM_MB=32 \
	$(BUSTED) $(BUSTED_ARGS)

# valgrind 3.19 knows neither openat2 nor the Landlock system calls: the
# module falls back (openat2) or refuses confined commands (Landlock), so this
# run makes its command sandboxes with confine = false; confinement itself is
# covered by the plain and sanitizer runs. PCRE2's JIT reads 16 bytes at a
# time up to the end of a subject's last aligned block, which memcheck
# reports: this run matches with PCRE2's interpreter (SANDBOX_NO_JIT).
valgrind: $(MODULE) $(TESTBIN) $(DOC_WANT)
	bash scripts/npm-deps.sh
	SANDBOX_TEST_UNCONFINED=1 SANDBOX_NO_JIT=1 SANDBOX_DIFF_SEQUENCES=200 SANDBOX_STREAM_MB=4 valgrind --quiet --leak-check=full --show-leak-kinds=definite,indirect \
	  --errors-for-leak-kinds=definite,indirect --error-exitcode=99 \
	  --suppressions=$(abspath spec/support/valgrind.supp) \
	  $(BUSTED) $(BUSTED_ARGS)

# The long rename-exchange race run (the suite runs a short one).
RACE_ROUNDS ?= 20000
race: $(MODULE) $(TESTBIN)
	SANDBOX_RACE_ROUNDS=$(RACE_ROUNDS) $(BUSTED) spec/race_spec.lua

# Many more differential sequences than the suite runs.
DIFF_SEQUENCES ?= 100000
difftest: $(MODULE)
	SANDBOX_DIFF_SEQUENCES=$(DIFF_SEQUENCES) $(BUSTED) spec/differential_spec.lua

# libFuzzer targets (clang): the library objects carry the sanitizer and
# coverage instrumentation, each fuzz/fuzz_*.c adds the entry point.
FUZZ_CC     ?= clang
FUZZ_BUILD  := build-fuzz
FUZZ_SAN    := -fsanitize=address,undefined -fno-sanitize-recover=undefined
FUZZ_CFLAGS := -std=c11 -D_GNU_SOURCE -g -O1 -fno-omit-frame-pointer -Wall -Wextra -Werror \
               -Wno-unused-parameter -Icsrc $(LUA_INC) $(FUZZ_SAN)
FUZZ_TARGETS := $(patsubst fuzz/%.c,$(FUZZ_BUILD)/%,$(wildcard fuzz/fuzz_*.c))
FUZZ_TIME   ?= 60
$(FUZZ_BUILD)/obj/%.o: csrc/%.c
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(FUZZ_CFLAGS) -fsanitize=fuzzer-no-link -MMD -MP -c $< -o $@
$(FUZZ_BUILD)/obj/exec/zygote_program.o: $(FUZZ_BUILD)/zygote/sandbox-spawn
$(FUZZ_BUILD)/obj/exec/zygote_program.o: FUZZ_CFLAGS += -DSB_ZYGOTE_PROGRAM='"$(abspath $(FUZZ_BUILD)/zygote/sandbox-spawn)"'
$(FUZZ_BUILD)/obj/confine/init_program.o: $(FUZZ_BUILD)/init/sandbox-init
$(FUZZ_BUILD)/obj/confine/init_program.o: FUZZ_CFLAGS += -DSB_INIT_PROGRAM='"$(abspath $(FUZZ_BUILD)/init/sandbox-init)"'
$(FUZZ_BUILD)/libsandbox-fuzz.a: $(patsubst csrc/%.c,$(FUZZ_BUILD)/obj/%.o,$(SRC))
	rm -f $@ && ar rcs $@ $^
$(FUZZ_BUILD)/fuzz_%: fuzz/fuzz_%.c $(FUZZ_BUILD)/libsandbox-fuzz.a
	$(FUZZ_CC) $(FUZZ_CFLAGS) -fsanitize=fuzzer -o $@ $^ -llua5.4 -luv -lcurl -lpcre2-8 -lssl -lcrypto -lpthread -lm
# the document helpers' readers, with their libraries (not in libsandbox-fuzz.a)
$(FUZZ_BUILD)/fuzz_ooxml: fuzz/fuzz_ooxml.c csrc/doc/out.c csrc/base/utf8.c $(filter-out csrc/doc/office_kinds.c,$(OFFICE_SRC)) $(wildcard csrc/doc/*.h)
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(FUZZ_CFLAGS) $$(pkg-config --cflags $(OFFICE_PKGS)) -fsanitize=fuzzer -o $@ $(filter %.c,$^) \
	  $$(pkg-config --libs $(OFFICE_PKGS)) -lz
$(FUZZ_BUILD)/fuzz_pdf: fuzz/fuzz_pdf.c csrc/doc/out.c csrc/base/utf8.c csrc/doc/pdf.c $(wildcard csrc/doc/*.h)
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(FUZZ_CFLAGS) $$(pkg-config --cflags $(RENDER_PKGS)) -fsanitize=fuzzer -o $@ $(filter %.c,$^) \
	  $$(pkg-config --libs $(RENDER_PKGS))
-include $(wildcard $(FUZZ_BUILD)/obj/*/*.d)
fuzz-build: $(FUZZ_TARGETS)
fuzz: fuzz-build
	FUZZ_TIME=$(FUZZ_TIME) bash scripts/fuzz.sh $(FUZZ_TARGETS)

# Coverage of csrc/ from the whole suite (gcc --coverage, gcovr summary).
# (the module in build/ too: agent-sandbox, started as a client would, finds
# it there; the counter files made first, writable by all, so the suite's
# children that run as nobody add theirs instead of printing that they
# cannot)
coverage: $(MODULE)
	bash scripts/npm-deps.sh # the test peers (E2B's, the MCP client) run on node
	rm -rf build-cov
	$(MAKE) BUILD=build-cov all OPT=-O0 SANFLAGS="--coverage -fprofile-update=atomic"
	chmod -R a+rwX build-cov/obj
	(umask 000 && $(LUA) -e 'package.cpath = "build-cov/?.so;" .. package.cpath; require "sandbox.core"')
	-SANDBOX_BUILD=$(abspath build-cov) $(BUSTED) $(BUSTED_ARGS) >build-cov/suite.log 2>&1
	@tail -n 3 build-cov/suite.log
	gcovr --root . --filter 'csrc/' --branches --txt build-cov/branches.txt build-cov/obj
	gcovr --root . --filter 'csrc/' --print-summary --txt build-cov/lines.txt build-cov/obj | tail -n 3
	@echo "per-file tables: build-cov/lines.txt build-cov/branches.txt"

# Baselines for the benchmarks: a bare C uthash tree for Lua, C loops.
BENCH := $(BUILD)/bench
bench-build: $(BENCH)/benchtree.so $(BENCH)/w2_c $(BENCH)/w3_c $(BENCH)/bigfile_c $(BENCH)/remote_rt $(BENCH)/tls_srv \
             $(BENCH)/seccomp_cost
# what installing the seccomp filter costs a command (bench/seccomp_cost.c)
$(BENCH)/seccomp_cost: bench/seccomp_cost.c csrc/confine/seccomp.c
	@mkdir -p $(dir $@)
	$(CC) -std=c11 -D_GNU_SOURCE -O2 -Wall -Wextra -Werror -Icsrc -o $@ $^
# the HTTPS server behind the secrets proxy (bench/secrets_ops.lua)
$(BENCH)/tls_srv: bench/tls_srv.c
	@mkdir -p $(dir $@)
	$(CC) -std=c11 -D_GNU_SOURCE -O2 -Wall -Wextra -Werror -o $@ $< -lssl -lcrypto -lpthread
# the remote client's round trips (bench/remote_ops.lua)
$(BENCH)/remote_rt: bench/remote_rt.c csrc/remote/client.c csrc/remote/connect.c csrc/remote/envd.c \
                    csrc/remote/process.c csrc/remote/json.c csrc/remote/json_write.c csrc/base/mem.c csrc/base/err.c \
                    csrc/base/utf8.c
	@mkdir -p $(dir $@)
	$(CC) -std=c11 -D_GNU_SOURCE -O2 -Wall -Wextra -Werror -Icsrc $(LUA_INC) -o $@ $^ $(LUA_LIB) -lcurl -lm
$(BENCH)/benchtree.so: bench/baseline/uthash_tree.c
	@mkdir -p $(dir $@)
	$(CC) -std=c11 -D_GNU_SOURCE -O2 -fPIC -shared -Wall -Wextra -Werror $(LUA_INC) -o $@ $<
$(BENCH)/%: bench/%.c
	@mkdir -p $(dir $@)
	$(CC) -std=c11 -D_GNU_SOURCE -O2 -Wall -Wextra -Werror -o $@ $<
bench:
	bash scripts/bench.sh

demo: $(MODULE)
	$(LUA) examples/agent.lua

# Install the module, the Lua layer and the command line (the rock's
# install step runs this with luarocks' directories).
LUA_VERSION ?= $(if $(filter luajit,$(LUA)),5.1,$(patsubst lua%,%,$(LUA)))
PREFIX      ?= /usr/local
INST_LIBDIR ?= $(PREFIX)/lib/lua/$(LUA_VERSION)
INST_LUADIR ?= $(PREFIX)/share/lua/$(LUA_VERSION)
INST_BINDIR ?= $(PREFIX)/bin
install: $(MODULE) $(DOC_WANT)
	install -d $(DESTDIR)$(INST_LIBDIR)/sandbox
	install -m 755 $(MODULE) $(DESTDIR)$(INST_LIBDIR)/sandbox/core.so
	$(if $(DOC_HAVE),install -m 755 $(DOCPARSE) $(DOCRENDER) $(DESTDIR)$(INST_LIBDIR)/sandbox/)
	cd lua && find sandbox -name '*.lua' -exec install -D -m 644 {} $(DESTDIR)$(INST_LUADIR)/{} \;
	install -d $(DESTDIR)$(INST_BINDIR)
	sed -e '1s|.*|#!/usr/bin/env $(LUA)|' \
	    -e 's|^local INSTALLED_PATH, INSTALLED_CPATH = nil, nil.*|local INSTALLED_PATH, INSTALLED_CPATH = "$(INST_LUADIR)/?.lua;$(INST_LUADIR)/?/init.lua", "$(INST_LIBDIR)/?.so"|' \
	    bin/agent-sandbox > $(DESTDIR)$(INST_BINDIR)/agent-sandbox
	chmod 755 $(DESTDIR)$(INST_BINDIR)/agent-sandbox

clean:
	rm -rf build build-asan build-cov build-fuzz

lint:
	luacheck --no-color -q lua plugin bin/agent-sandbox spec

docs: $(MODULE)
	$(LUA) scripts/gen-docs.lua types/sandbox.lua docs/API.md
types: docs

docs-check: $(MODULE)
	@t=$$(mktemp) && a=$$(mktemp) && $(LUA) scripts/gen-docs.lua $$t $$a && \
	  if diff -u types/sandbox.lua $$t && diff -u docs/API.md $$a; then rm -f $$t $$a; else rm -f $$t $$a; \
	  echo "generated documents drifted from the option schemas or docs/options.lua: run make docs"; exit 1; fi

C_CORE := $(wildcard csrc/*.h csrc/*/*.c csrc/*/*.h)
format:
	clang-format -i $(C_CORE)

format-check:
	clang-format --dry-run --Werror $(C_CORE)
