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
# (src/image/store*.c, sha256.c) is the lean ward's.
# The dialects (SPEC §16) sit above the server: ward-net's only.
DIALECT_SRC := $(wildcard src/dialect/*.c src/dialect/*/*.c)
NET_SRC  := $(wildcard src/server/*.c) src/front/remote.c src/front/dialects.c src/front/session_cli.c $(wildcard src/testjob/*.c) \
	src/image/import.c src/image/unpack.c $(wildcard src/build/*.c) src/image/build_cache.c src/sandbox/seccomp_build.c src/image/build_layer.c src/front/image_cli.c src/front/build_cli.c src/front/judge_cli.c $(DIALECT_SRC)

LIB_SRC  := $(sort $(filter-out src/front/cli.c,$(wildcard src/*/*.c)) $(DIALECT_SRC))
CLI_SRC  := src/front/cli.c
UNIT_SRC := $(sort $(wildcard tests/unit/*.c))
HELPERS  := $(sort $(wildcard tests/helpers/*.c))

B  := build
BA := build-asan

LIB_OBJ  := $(LIB_SRC:%.c=$(B)/%.o)
LIBA_OBJ := $(LIB_SRC:%.c=$(BA)/%.o)

.PHONY: all asan deps check test demo bench install clean format format-check test-cgroup2 helpers fuzz fuzz-bin soak image man code-interpreter-image
all: $(B)/ward $(B)/ward-net $(B)/ward-unzip $(B)/unit_tests $(B)/libward.a $(B)/ward.1 helpers

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

# The code interpreter's kernels (src/dialect/e2b/e2b_interp.c), the same
# way: ward_kernel.py as ward_kernel_py, and so on.
KERNELS := ward_kernel.py ward_charts.py ward_kernel.js ward_kernel.sh
KERNEL_H := $(patsubst %,$(B)/gen/%.h,$(subst .,_,$(KERNELS)))
$(B)/gen/%_py.h: src/dialect/e2b/%.py
	@mkdir -p $(dir $@)
	{ echo 'static const unsigned char $*_py[] = {'; xxd -i <$<; echo ', 0x00 };'; } >$@.tmp && mv $@.tmp $@
$(B)/gen/%_js.h: src/dialect/e2b/%.js
	@mkdir -p $(dir $@)
	{ echo 'static const unsigned char $*_js[] = {'; xxd -i <$<; echo ', 0x00 };'; } >$@.tmp && mv $@.tmp $@
$(B)/gen/%_sh.h: src/dialect/e2b/%.sh
	@mkdir -p $(dir $@)
	{ echo 'static const unsigned char $*_sh[] = {'; xxd -i <$<; echo ', 0x00 };'; } >$@.tmp && mv $@.tmp $@
$(B)/src/dialect/e2b/e2b_interp.o $(BA)/src/dialect/e2b/e2b_interp.o: $(KERNEL_H)
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

# The library as built (its hidden symbols still global inside the
# archive): what ward-net and the unit tests link.
$(B)/libward-internal.a: $(LIB_OBJ)
	rm -f $@ && ar rcs $@ $^

# The archive `make install` installs: the library as one relocatable object
# whose only global symbols are the API of include/ward*.h (declared there
# with default visibility; everything else is built hidden and localized
# here), so a program that links libward meets none of its internal names.
# tests/house/symbols.sh checks the exported set.
$(B)/libward.a: $(LIB_OBJ)
	rm -f $@ $(B)/libward.o
	$(LD) -r -o $(B)/libward.o $^
	objcopy --localize-hidden --strip-unneeded $(B)/libward.o
	ar rcs $@ $(B)/libward.o

$(BA)/libward-internal.a: $(LIBA_OBJ)
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

$(B)/ward-net: $(B)/src/front/cli.o $(B)/libward-internal.a
	$(CC) $(ALL_LDFLAGS) -o $@ $^ $(LIBS)

$(BA)/ward: $(BA)/src/front/cli-lean.o $(filter-out $(NET_SRC:%.c=$(BA)/%.o),$(LIBA_OBJ))
	$(CC) $(ALL_LDFLAGS) -fsanitize=address,undefined -o $@ $^ $(LEAN_LIBS)

$(BA)/ward-net: $(BA)/src/front/cli.o $(BA)/libward-internal.a
	$(CC) $(ALL_LDFLAGS) -fsanitize=address,undefined -o $@ $^ $(LIBS)

$(B)/unit_tests: $(UNIT_SRC:%.c=$(B)/%.o) $(B)/libward-internal.a
	$(CC) $(ALL_LDFLAGS) -o $@ $^ $(LIBS)

# The unit tests with the sanitizers too: the parsers, the proxy and the
# decoders meet hostile bytes there first.
$(BA)/unit_tests: $(UNIT_SRC:%.c=$(BA)/%.o) $(BA)/libward-internal.a
	$(CC) $(ALL_LDFLAGS) -fsanitize=address,undefined -o $@ $^ $(LIBS)

# Small static helper programs the tests run inside the sandbox (attacks,
# probes).  Static so that they run under any --rootfs.
HELPER_BINS := $(HELPERS:tests/helpers/%.c=$(B)/helpers/%)
$(B)/helpers/cgtool: $(wildcard src/sandbox/cgroup*.[ch]) src/sandbox/lockfile.c src/base/errf.c  # cgtool includes the cgroup mechanism's sources
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

# libFuzzer targets (clang; tests/fuzz/): one per parser of hostile bytes,
# each tests/fuzz/fuzz_NAME.c linked as build/fuzz_NAME against the library
# built again with the fuzzer's coverage and the sanitizers (build-fuzz/).
# `make fuzz-bin` builds them all (tests/run's fuzz group runs each on its
# seed corpus, tests/fuzz/corpus/NAME/, for a few seconds); `make fuzz`
# runs them longer: FUZZ_SECONDS each (default 300).
FZ := build-fuzz
FUZZ_CFLAGS = -std=gnu11 $(WARN) -Wno-string-concatenation -Wno-format-nonliteral -Wno-missing-field-initializers -g -O1 -fno-omit-frame-pointer -Iinclude -Isrc $(PKG_CFLAGS) \
	-fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=undefined \
	-DWARD_LIBEXECDIR='"$(LIBEXECDIR)"' -DWARD_DATADIR='"$(PREFIX)/share/ward"'
FUZZ_TARGETS := $(patsubst tests/fuzz/%.c,$(B)/%,$(sort $(wildcard tests/fuzz/fuzz_*.c)))
FUZZ_OBJ := $(LIB_SRC:%.c=$(FZ)/%.o) $(FZ)/libexec/unzip.o
FUZZ_SECONDS ?= 300
$(FZ)/%.o: %.c
	@mkdir -p $(dir $@)
	clang $(FUZZ_CFLAGS) -MMD -MP -c $< -o $@
$(FZ)/src/testjob/testjob.o: $(B)/gen/harness_py.h
$(FZ)/src/dialect/e2b/e2b_interp.o: $(B)/gen/ward_kernel_py.h
$(FZ)/src/testjob/testjob.o $(FZ)/src/dialect/e2b/e2b_interp.o: FUZZ_CFLAGS += -I$(B)/gen
$(FZ)/src/sandbox/seccomp.o: $(B)/gen/seccomp_bpf.h
$(FZ)/src/sandbox/seccomp.o: FUZZ_CFLAGS += -I$(B)/gen -DWARD_SECCOMP_BPF_H='"seccomp_bpf.h"'
$(FZ)/libexec/unzip.o: FUZZ_CFLAGS += -Ilibexec
$(FZ)/libward.a: $(FUZZ_OBJ)
	rm -f $@ && ar rcs $@ $^
$(B)/fuzz_%: tests/fuzz/fuzz_%.c $(FZ)/libward.a
	@mkdir -p $(dir $@)
	clang $(FUZZ_CFLAGS) -Ilibexec -fsanitize=fuzzer -o $@ $< $(FZ)/libward.a $(LIBS)
fuzz-bin: $(FUZZ_TARGETS)
fuzz: fuzz-bin
	FUZZ_SECONDS=$(FUZZ_SECONDS) tests/fuzz/run.sh

deps:
	@scripts/install-deps

# The README's test command: installs what is missing, builds everything
# (the sanitizer build too) and runs every test group.
check: deps
	$(MAKE) all asan fuzz-bin
	tests/run

test: all asan fuzz-bin
	tests/run

# cgroup v2 group inside a throwaway VM (pure v2, kernel 6.1).
test-cgroup2: all
	tests/run-vm cgroup2

# E2B's default template, from Debian's packages (SPEC §18); STORE= picks the store
code-interpreter-image: all
	scripts/code-interpreter-image $(STORE)

# the demo installs only what building needs (the test toolchain is
# make check's)
demo:
	@scripts/install-deps build
	$(MAKE) $(B)/ward $(B)/ward-net $(B)/ward-unzip
	@scripts/demo

bench: all
	bench/run

# build/ward-image.tar (SPEC §20): Debian with ward installed, for `docker
# load` and `podman load`, made with mmdebstrap, umoci and skopeo.
image: $(B)/ward-image.tar
$(B)/ward-image.tar: $(B)/ward $(B)/ward-net $(B)/ward-unzip languages.json scripts/make-image tests/image/build-image
	scripts/make-image $@

# The man page, from ward's own --help texts (scripts/make-man).
man: $(B)/ward.1
$(B)/ward.1: $(B)/ward $(B)/ward-net scripts/make-man
	scripts/make-man $(B)/ward $@

# The soak's full form (tests/soak/soak.sh; tests/run's soak group runs 300
# requests): 10,000 mixed requests against every API, then nothing lost;
# its PASS/FAIL lines and its figures ("# soak:") on stdout.
SOAK_REQUESTS ?= 10000
soak: all
	SOAK_REQUESTS=$(SOAK_REQUESTS) SOAK_SECONDS=$${SOAK_SECONDS:-1800} bash tests/soak/soak.sh

install: $(B)/ward $(B)/ward-net $(B)/ward-unzip $(B)/libward.a $(B)/ward.1
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
	install -m 0644 $(B)/libward.a $(DESTDIR)$(PREFIX)/lib/libward.a
	install -d $(DESTDIR)$(PREFIX)/share/man/man1
	install -m 0644 $(B)/ward.1 $(DESTDIR)$(PREFIX)/share/man/man1/ward.1

# The house style is .clang-format's; `make format` applies it, `make
# format-check` (tests/house/format.sh, so make check) fails on any source
# it would change.
FORMAT_SRC = $(sort $(LIB_SRC) $(CLI_SRC) $(wildcard include/*.h src/*/*.h src/dialect/*/*.h libexec/*.[ch]))
format:
	clang-format -i $(FORMAT_SRC)
format-check:
	clang-format --dry-run -Werror $(FORMAT_SRC)

clean:
	rm -rf $(B) $(BA) $(FZ)

-include $(shell find $(B) $(BA) $(FZ) -path '*/image-cache' -prune -o -name '*.d' -type f -print 2>/dev/null)
