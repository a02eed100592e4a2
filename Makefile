# ward — plain GNU make.  `make`, `make check`, `make demo`, `make bench`,
# `make install PREFIX=/usr/local DESTDIR=`.
PREFIX  ?= /usr/local
DESTDIR ?=
CC      ?= cc

PKG_CFLAGS := -I/usr/include/libxml2
WARN    := -Wall -Wextra -Werror -Wshadow -Wformat=2 -Wno-unused-parameter
HARDEN  := -D_FORTIFY_SOURCE=2 -fstack-protector-strong -fPIE
CFLAGS  ?= -O2 -g
LIBEXECDIR ?= $(PREFIX)/libexec/ward
ALL_CFLAGS = -std=gnu11 $(WARN) $(HARDEN) $(CFLAGS) -Iinclude -Isrc $(PKG_CFLAGS) -MMD -MP \
	-ffunction-sections -fdata-sections -fvisibility=hidden -DWARD_LIBEXECDIR='"$(LIBEXECDIR)"' \
	-DWARD_DATADIR='"$(PREFIX)/share/ward"'
LDFLAGS ?=
ALL_LDFLAGS = -pie -Wl,-z,relro,-z,now $(LDFLAGS)
LIBS    := -lseccomp -ljansson -lmicrohttpd -lxml2 -larchive -lpthread -lm  # libcurl: dlopen (src/front/remote.c)
# `ward` itself is lean and static: `ward run` and `ward doctor` need only
# libc, libseccomp and jansson (the dynamic loader's work for libcurl,
# gnutls, libxml2 and ICU was a few milliseconds of every run).  `ward serve`,
# `ward test` and `ward run --remote` exec ward-net beside it (or in
# LIBEXECDIR), the same CLI linked with everything.
LEAN_LIBS := -Wl,--gc-sections -Wl,--as-needed -lseccomp -ljansson -lpthread -lm
# The image store's import (libarchive) is ward-net's too; its reading half
# (src/image/store.c, sha256.c) is the lean ward's.
# The dialects (SPEC §16) sit above the server: ward-net's only.
DIALECT_SRC := $(wildcard src/dialect/*.c src/dialect/*/*.c)
NET_SRC  := $(wildcard src/server/*.c) src/front/remote.c src/front/session_cli.c $(wildcard src/testjob/*.c) \
	src/image/import.c src/image/unpack.c src/front/image_cli.c src/front/judge_cli.c $(DIALECT_SRC)

LIB_SRC  := $(sort $(filter-out src/front/cli.c,$(wildcard src/*/*.c)) $(DIALECT_SRC))
CLI_SRC  := src/front/cli.c
UNIT_SRC := $(sort $(wildcard tests/unit/*.c))
HELPERS  := $(sort $(wildcard tests/helpers/*.c))

B  := build
BA := build-asan

LIB_OBJ  := $(LIB_SRC:%.c=$(B)/%.o)
LIBA_OBJ := $(LIB_SRC:%.c=$(BA)/%.o)

.PHONY: all asan deps check test demo bench install clean format test-cgroup2 helpers fuzz
all: $(B)/ward $(B)/ward-net $(B)/ward-unzip $(B)/unit_tests $(B)/libward-export.a helpers

$(B)/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -c $< -o $@

$(BA)/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -O1 -fno-omit-frame-pointer -fsanitize=address,undefined -fno-sanitize-recover=undefined -c $< -o $@

# The python test harness, embedded in the binary as a NUL-terminated array
# (src/testjob/testjob.c); xxd -i on stdin prints just the bytes.
$(B)/gen/harness_py.h: src/testjob/ward_harness.py
	@mkdir -p $(dir $@)
	{ echo 'static const unsigned char ward_harness_py[] = {'; xxd -i <$<; echo ', 0x00 };'; } >$@.tmp && mv $@.tmp $@
$(B)/src/testjob/testjob.o $(BA)/src/testjob/testjob.o: $(B)/gen/harness_py.h
$(B)/src/testjob/testjob.o $(BA)/src/testjob/testjob.o: ALL_CFLAGS += -I$(B)/gen

# The code interpreter's kernel (src/dialect/e2b/e2b_interp.c), the same way.
$(B)/gen/ward_kernel_py.h: src/dialect/e2b/ward_kernel.py
	@mkdir -p $(dir $@)
	{ echo 'static const unsigned char ward_kernel_py[] = {'; xxd -i <$<; echo ', 0x00 };'; } >$@.tmp && mv $@.tmp $@
$(B)/src/dialect/e2b/e2b_interp.o $(BA)/src/dialect/e2b/e2b_interp.o: $(B)/gen/ward_kernel_py.h
$(B)/src/dialect/e2b/e2b_interp.o $(BA)/src/dialect/e2b/e2b_interp.o: ALL_CFLAGS += -I$(B)/gen

# The seccomp programs, compiled once at build time (tools/seccomp_gen.c).
$(B)/gen/seccomp-runtime.o: src/sandbox/seccomp.c src/sandbox/seccomp.h
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -UWARD_SECCOMP_BPF_H -c $< -o $@
$(B)/gen/seccomp_gen: tools/seccomp_gen.c $(B)/gen/seccomp-runtime.o
	$(CC) $(ALL_CFLAGS) -UWARD_SECCOMP_BPF_H $(ALL_LDFLAGS) -o $@ $^ -lseccomp
$(B)/gen/seccomp_bpf.h: $(B)/gen/seccomp_gen
	$< >$@.tmp && mv $@.tmp $@
$(B)/src/sandbox/seccomp.o $(BA)/src/sandbox/seccomp.o: $(B)/gen/seccomp_bpf.h
$(B)/src/sandbox/seccomp.o $(BA)/src/sandbox/seccomp.o: ALL_CFLAGS += -I$(B)/gen -DWARD_SECCOMP_BPF_H='"seccomp_bpf.h"'

$(B)/libward.a: $(LIB_OBJ)
	rm -f $@ && ar rcs $@ $^

# The archive `make install` installs: the library as one relocatable object
# whose only global symbols are the API of include/ward*.h (declared there
# with default visibility; everything else is built hidden and localized
# here), so a program that links libward meets none of its internal names.
# tests/house/symbols.sh checks the exported set.
$(B)/libward-export.a: $(LIB_OBJ)
	rm -f $@ $(B)/libward-export.o
	$(LD) -r -o $(B)/libward-export.o $^
	objcopy --localize-hidden --strip-unneeded $(B)/libward-export.o
	ar rcs $@ $(B)/libward-export.o

$(BA)/libward.a: $(LIBA_OBJ)
	rm -f $@ && ar rcs $@ $^

$(B)/src/front/cli-lean.o: src/front/cli.c
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -DWARD_LEAN -c $< -o $@
$(BA)/src/front/cli-lean.o: src/front/cli.c
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -O1 -fno-omit-frame-pointer -fsanitize=address,undefined -fno-sanitize-recover=undefined -DWARD_LEAN -c $< -o $@

# Linked static-pie: with no dynamic loader work, `ward --version` starts in
# 1.9 ms against 3.2 ms dynamic (and /bin/true's 2.2 ms) on this machine.
$(B)/ward: $(B)/src/front/cli-lean.o $(filter-out $(NET_SRC:%.c=$(B)/%.o),$(LIB_OBJ))
	$(CC) $(ALL_LDFLAGS) -static-pie -o $@ $^ $(LEAN_LIBS)

$(B)/ward-net: $(B)/src/front/cli.o $(B)/libward.a
	$(CC) $(ALL_LDFLAGS) -o $@ $^ $(LIBS)

$(BA)/ward: $(BA)/src/front/cli-lean.o $(filter-out $(NET_SRC:%.c=$(BA)/%.o),$(LIBA_OBJ))
	$(CC) $(ALL_LDFLAGS) -fsanitize=address,undefined -o $@ $^ $(LEAN_LIBS)

$(BA)/ward-net: $(BA)/src/front/cli.o $(BA)/libward.a
	$(CC) $(ALL_LDFLAGS) -fsanitize=address,undefined -o $@ $^ $(LIBS)

$(B)/unit_tests: $(UNIT_SRC:%.c=$(B)/%.o) $(B)/libward.a
	$(CC) $(ALL_LDFLAGS) -o $@ $^ $(LIBS)

# The unit tests with the sanitizers too: the parsers, the proxy and the
# decoders meet hostile bytes there first.
$(BA)/unit_tests: $(UNIT_SRC:%.c=$(BA)/%.o) $(BA)/libward.a
	$(CC) $(ALL_LDFLAGS) -fsanitize=address,undefined -o $@ $^ $(LIBS)

# Small static helper programs the tests run inside the sandbox (attacks,
# probes).  Static so that they run under any --rootfs.
HELPER_BINS := $(HELPERS:tests/helpers/%.c=$(B)/helpers/%)
$(B)/helpers/cgtool: $(wildcard src/sandbox/cgroup*.[ch]) src/sandbox/lockfile.c  # cgtool includes the cgroup mechanism's sources
helpers: $(HELPER_BINS)
$(B)/helpers/%: tests/helpers/%.c
	@mkdir -p $(dir $@)
	$(CC) -std=gnu11 -O1 -g -Wall -Wextra -Werror -Wno-unused-parameter -Isrc -Iinclude -static -o $@ $<

asan: $(BA)/ward $(BA)/ward-net $(BA)/ward-unzip $(BA)/unit_tests

# Programs ward runs inside its sandboxes (libexec/, installed in LIBEXECDIR;
# ward serve finds them beside ward-net first).  ward-unzip unpacks Judge0's
# additional_files there (SPEC §16); it runs on the host's directories, so
# it links libarchive as the host has it.  build-asan gets the same program,
# without the sanitizers' shadow memory inside a sandbox's memory limit.
UNZIP_SRC := libexec/ward-unzip.c libexec/unzip.c
$(B)/ward-unzip $(BA)/ward-unzip: $(UNZIP_SRC) libexec/unzip.h
	@mkdir -p $(dir $@)
	$(CC) $(filter-out -MMD -MP,$(ALL_CFLAGS)) -Ilibexec $(ALL_LDFLAGS) -o $@ $(UNZIP_SRC) -larchive

# A libFuzzer target of the image layer unpacker (clang; tests/fuzz/).
FUZZ_SRC := src/image/unpack.c src/image/store.c src/image/sha256.c
fuzz: $(B)/fuzz_unpack $(B)/fuzz_unzip $(B)/fuzz_mcp
$(B)/fuzz_unpack: tests/fuzz/fuzz_unpack.c $(FUZZ_SRC)
	clang -std=gnu11 -g -O1 -Iinclude -Isrc -fsanitize=fuzzer,address,undefined -o $@ $^ -larchive -ljansson
# ... and of ward-unzip's writer (libexec/unzip.c), the Judge0 zips' parser.
$(B)/fuzz_unzip: tests/fuzz/fuzz_unzip.c libexec/unzip.c $(FUZZ_SRC)
	clang -std=gnu11 -g -O1 -Iinclude -Isrc -Ilibexec -fsanitize=fuzzer,address,undefined -o $@ $^ -larchive -ljansson

# ... and of MCP's message reader and dispatcher (src/dialect/mcp/mcp_rpc.c).
FUZZ_MCP_SRC := src/dialect/mcp/mcp_rpc.c src/wire/json.c src/wire/jsonw.c src/wire/base64.c src/wire/utf8.c \
	src/core/request.c src/core/egress.c src/core/pathguard.c
$(B)/fuzz_mcp: tests/fuzz/fuzz_mcp.c $(FUZZ_MCP_SRC)
	clang -std=gnu11 -g -O1 -Iinclude -Isrc -fsanitize=fuzzer,address,undefined -o $@ $^ -ljansson -lmicrohttpd

deps:
	@scripts/install-deps

# The README's test command: installs what is missing, builds everything
# (the sanitizer build too) and runs every test group.
check: deps
	$(MAKE) all asan
	tests/run

test: all asan
	tests/run

# cgroup v2 group inside a throwaway VM (pure v2, kernel 6.1).
test-cgroup2: all
	tests/run-vm cgroup2

demo: deps
	$(MAKE) $(B)/ward
	@scripts/demo

bench: all
	bench/run

install: $(B)/ward $(B)/ward-net $(B)/ward-unzip $(B)/libward-export.a
	install -d $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(PREFIX)/include $(DESTDIR)$(PREFIX)/lib
	install -d $(DESTDIR)$(LIBEXECDIR)
	install -m 0755 $(B)/ward $(DESTDIR)$(PREFIX)/bin/ward
	install -m 0755 $(B)/ward-net $(DESTDIR)$(LIBEXECDIR)/ward-net
	install -m 0755 $(B)/ward-unzip $(DESTDIR)$(LIBEXECDIR)/ward-unzip
	install -m 0644 include/ward.h $(DESTDIR)$(PREFIX)/include/ward.h
	install -m 0644 include/ward_image.h $(DESTDIR)$(PREFIX)/include/ward_image.h
	install -m 0644 include/ward_judge.h $(DESTDIR)$(PREFIX)/include/ward_judge.h
	install -d $(DESTDIR)$(PREFIX)/share/ward
	install -m 0644 languages.json $(DESTDIR)$(PREFIX)/share/ward/languages.json
	install -m 0644 $(B)/libward-export.a $(DESTDIR)$(PREFIX)/lib/libward.a

format:
	clang-format -i $(LIB_SRC) $(CLI_SRC) include/*.h src/*/*.h libexec/*.[ch]

clean:
	rm -rf $(B) $(BA)

-include $(shell find $(B) $(BA) -path '*/image-cache' -prune -o -name '*.d' -type f -print 2>/dev/null)
