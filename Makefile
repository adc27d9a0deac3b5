# lathist: build, run, test.
#   make          build ./lathist (needs the Debian packages in scripts/deps.sh)
#   make run      install missing packages, build, trace runqueue latency for 5 s
#   make check    install missing packages, build, run every test
#   make static   build/lathist-static: one statically linked binary for hosts with no packages
#   make fuzz     run the report reader's fuzz target (FUZZ_SECONDS, default 300)
#   make man      build/man/lathist*.8 from each verb's -h text (help2man)
#   make install  the binary and man pages under $(DESTDIR)$(PREFIX) (/usr/local)
#   make vmlinux  regenerate vmlinux/$(ARCH)/vmlinux.h from this kernel's BTF
#   make bench    lathist beside runqlat.bt, libbpf-tools and the empty-program floor, one
#                 table per cost (bench/table.py: README's Performance tables)
#                 (BASE=REV: REV's default runq beside it, in sections 1 and 8)
#   make bench-detail  the per-feature benchmarks (bench/runq_overhead.py, bio_overhead.py,
#                 records_overhead.py, counters_overhead.py, serve_overhead.py)
#   make bench-compare BASE=REV   runq's hot path against REV's build, interleaved
#   make bench-loader BASE=REV    the loader's CPU and memory with 10,000 keys against REV's build

ARCH ?= $(shell uname -m | sed -e 's/x86_64/x86/' -e 's/aarch64/arm64/')
CLANG ?= clang
LLVM_STRIP ?= llvm-strip
BPFTOOL ?= bpftool
CC ?= gcc
OUT := build
# Debian's python3, where the test packages (python3-jsonschema, ...) install
PYTHON ?= /usr/bin/python3

TOOLS := runq bio
# src/: the core (dispatch, options, session, registry, BPF helpers, counters,
# records, perf events, doctor); src/report/: the report model, its merge and
# renderers; src/tools/: one loader per tool
CORE_SRCS := cli.c target.c file_opts.c metrics_opts.c test_hooks.c util.c session.c tool.c registry.c bpfcommon.c counters.c recorder.c recline.c pmu.c \
	cgroup.c doctor.c context.c
REPORT_SRCS := hist.c report.c fold.c outbuf.c render_text.c text_rank.c text_losses.c render_json.c render_csv.c render_openmetrics.c \
	report_cmd.c merge_read.c merge_doc.c merge_parts.c merge_context.c heatmap.c anonymize.c \
	render_diff.c
LIB_SRCS := $(addprefix src/,$(CORE_SRCS)) $(addprefix src/report/,$(REPORT_SRCS))
TOOL_SRCS := $(addprefix src/tools/,$(addsuffix .c,$(TOOLS)))

CFLAGS ?= -O2 -g
CFLAGS += -Wall -Wextra -Wno-unused-parameter -std=gnu11 -D_GNU_SOURCE -Iinclude -Isrc -Isrc/report \
	-Isrc/tools -I$(OUT)
LIBS := $(shell pkg-config --libs libbpf json-c libcrypto 2>/dev/null || echo -lbpf -ljson-c -lcrypto) -lelf -lz -lm \
	-lpthread
# lathist serve's HTTP server; the static build has serve without it (LH_NO_SERVE)
HTTP_LIBS := $(shell pkg-config --libs libmicrohttpd 2>/dev/null || echo -lmicrohttpd)
BPF_CFLAGS := -g -O2 -target bpf -D__TARGET_ARCH_$(ARCH) -Iinclude -Ivmlinux/$(ARCH) -Wall \
	-Wno-unused-function

LIB_OBJS := $(patsubst src/%.c,$(OUT)/%.o,$(LIB_SRCS))
TOOL_OBJS := $(patsubst src/%.c,$(OUT)/%.o,$(TOOL_SRCS))
SKELS := $(addprefix $(OUT)/,$(addsuffix .skel.h,$(TOOLS)))
HEADERS := $(wildcard include/*.h src/*.h src/*/*.h)

.PHONY: all run check deps test-deps unit integration vmlinux bench bench-detail bench-compare \
	bench-loader clean fuzz static man install
all: lathist

deps:
	@scripts/deps.sh build
test-deps:
	@scripts/deps.sh test

$(OUT):
	@mkdir -p $@

# each object depends on the headers it includes (-MMD -MP: build/*.d), each
# tool's loader on its own skeleton; BPF objects keep BTF, lose DWARF (llvm-strip -g)
$(OUT)/%.bpf.o: bpf/%.bpf.c | $(OUT)
	$(CLANG) $(BPF_CFLAGS) -MMD -MP -c $< -o $@
	$(LLVM_STRIP) -g $@

$(OUT)/%.skel.h: $(OUT)/%.bpf.o
	$(BPFTOOL) gen skeleton $< name $*_bpf > $@.tmp && mv $@.tmp $@

$(OUT)/%.o: src/%.c | $(OUT)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -MMD -MP -c $< -o $@

$(foreach t,$(TOOLS),$(eval $(OUT)/tools/$(t).o: $(OUT)/$(t).skel.h))

# meta.context.git_revision: rewritten only when the revision changes ("" outside git)
$(OUT)/gitrev.h: FORCE | $(OUT)
	@r=$$(git -C $(CURDIR) describe --always --dirty --abbrev=12 2>/dev/null); \
	echo "#define LATHIST_GIT_REVISION \"$$r\"" > $@.tmp; \
	cmp -s $@.tmp $@ && rm -f $@.tmp || mv $@.tmp $@
$(OUT)/context.o: $(OUT)/gitrev.h
FORCE:
-include $(wildcard $(OUT)/*.d $(OUT)/*/*.d)

lathist: $(OUT)/main.o $(LIB_OBJS) $(TOOL_OBJS) $(OUT)/serve.o
	$(CC) $(CFLAGS) $^ $(LIBS) $(HTTP_LIBS) -o $@

$(OUT)/serve-static.o: src/serve.c | $(OUT)
	$(CC) $(CFLAGS) -DLH_NO_SERVE -MMD -MP -c $< -o $@

# One statically linked binary (the BPF objects are inside, in the skeletons) for hosts
# with no packages: Debian's static libbpf, libelf, zlib, json-c and libcrypto. glibc warns
# that libcrypto's unused dlopen/getaddrinfo paths would need the host's glibc at run time.
static: $(OUT)/lathist-static
$(OUT)/lathist-static: $(OUT)/main.o $(LIB_OBJS) $(TOOL_OBJS) $(OUT)/serve-static.o
	$(CC) $(CFLAGS) -static $^ -lbpf -lelf -lz -ljson-c -lcrypto -lm -lpthread -o $@ 2>&1 | \
		{ grep -v -e "statically linked applications requires at runtime" \
			-e "in function \`" || true; }
	@test -x $@

run: deps
	@$(MAKE) --no-print-directory lathist
	./lathist runq -d 5

# ---- tests ----
UNIT_TESTS := test_hist test_util test_opts test_counters test_pmu test_export test_fold test_records
UNIT_BINS := $(addprefix $(OUT)/tests/,$(UNIT_TESTS))
WORKLOADS := $(OUT)/tests/runqwork $(OUT)/tests/biowork $(OUT)/tests/bio_synth \
	$(OUT)/tests/runq_synth \
	$(OUT)/tests/runqwork-static $(OUT)/tests/biowork-static

$(OUT)/tests:
	@mkdir -p $@

$(OUT)/tests/test_%: tests/unit/test_%.c $(LIB_OBJS) $(TOOL_OBJS) $(HEADERS) | $(OUT)/tests
	$(CC) $(CFLAGS) $< $(LIB_OBJS) $(TOOL_OBJS) $(LIBS) -lcmocka -o $@

$(OUT)/tests/%: tests/workload/%.c tests/workload/workload.h | $(OUT)/tests
	$(CC) -O2 -g -Wall -Wextra -std=gnu11 -D_GNU_SOURCE $< -lpthread -o $@

# static workloads for the kernel-matrix VMs
$(OUT)/tests/%-static: tests/workload/%.c tests/workload/workload.h | $(OUT)/tests
	$(CC) -static -O2 -Wall -Wextra -std=gnu11 -D_GNU_SOURCE $< -lpthread -o $@

# BPF test helpers and the synthetic-request runner (C10)
$(OUT)/tests/fakerq.bpf.o: tests/bpf/fakerq.bpf.c | $(OUT)/tests
	$(CLANG) $(BPF_CFLAGS) -c $< -o $@

$(OUT)/tests/fakerq.skel.h: $(OUT)/tests/fakerq.bpf.o
	$(BPFTOOL) gen skeleton $< name fakerq_bpf > $@.tmp && mv $@.tmp $@

$(OUT)/tests/bio_synth: tests/bpf/bio_synth.c $(OUT)/tests/fakerq.skel.h $(OUT)/bio.skel.h \
		$(OUT)/bpfcommon.o
	$(CC) $(CFLAGS) -I$(OUT)/tests $< $(OUT)/bpfcommon.o $(LIBS) -o $@

# the runq programs against fake tasks and runqueues, with events left out
$(OUT)/tests/faketask.bpf.o: tests/bpf/faketask.bpf.c | $(OUT)/tests
	$(CLANG) $(BPF_CFLAGS) -c $< -o $@

$(OUT)/tests/faketask.skel.h: $(OUT)/tests/faketask.bpf.o
	$(BPFTOOL) gen skeleton $< name faketask_bpf > $@.tmp && mv $@.tmp $@

$(OUT)/tests/runq_synth: tests/bpf/runq_synth.c $(OUT)/tests/faketask.skel.h $(OUT)/runq.skel.h \
		$(OUT)/counters.o $(OUT)/report/outbuf.o $(OUT)/bpfcommon.o
	$(CC) $(CFLAGS) -I$(OUT)/tests $< $(OUT)/counters.o $(OUT)/report/outbuf.o $(OUT)/bpfcommon.o \
		$(LIBS) -o $@

# libFuzzer target for lathist report's reader (clang, ASan + UBSan), all sources rebuilt
FUZZ_CFLAGS := -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined \
	-std=gnu11 -D_GNU_SOURCE -Iinclude -Isrc -Isrc/report -Isrc/tools -I$(OUT)
$(OUT)/fuzz/report_fuzz: tests/fuzz/report_fuzz.c $(LIB_SRCS) $(TOOL_SRCS) $(HEADERS) $(SKELS) $(OUT)/gitrev.h
	@mkdir -p $(OUT)/fuzz
	$(CLANG) $(FUZZ_CFLAGS) $< $(LIB_SRCS) $(TOOL_SRCS) $(LIBS) -o $@

fuzz: $(OUT)/fuzz/report_fuzz
	@mkdir -p $(OUT)/fuzz/corpus
	$(OUT)/fuzz/report_fuzz -max_total_time=$${FUZZ_SECONDS:-300} $(OUT)/fuzz/corpus tests/fuzz/seeds

unit: lathist $(UNIT_BINS)
integration: lathist $(WORKLOADS)

check: deps test-deps
	@$(MAKE) --no-print-directory lathist $(UNIT_BINS) $(WORKLOADS) $(OUT)/fuzz/report_fuzz \
		$(OUT)/lathist-static
	$(PYTHON) tests/run.py

# ---- manual pages and install ----
# One page per verb from its two sources, so that the pages, the binary and the docs
# agree: the verb's synopsis (-h -v, help2man) and its page docs/VERB.md (go-md2man);
# lathist.8 adds how to read the output and the loss classes.
PREFIX ?= /usr/local
VERBS := $(TOOLS) report serve doctor
MANS := $(OUT)/man/lathist.8 $(addprefix $(OUT)/man/lathist-,$(addsuffix .8,$(VERBS)))
VERSION = $(shell sed -n 's/.*LATHIST_VERSION "\(.*\)"/\1/p' src/version.h)
export VERSION

man: $(MANS)
$(OUT)/man/lathist.8: lathist scripts/man.sh docs/output.md docs/losses.md
	@mkdir -p $(OUT)/man
	scripts/man.sh ./lathist - "in-kernel latency histograms with honest loss accounting" $@ \
		docs/output.md docs/losses.md
$(OUT)/man/lathist-%.8: lathist scripts/man.sh docs/%.md
	@mkdir -p $(OUT)/man
	scripts/man.sh ./lathist $* "$$(./lathist -h | awk '$$1 == "$*" { $$1 = ""; sub(/^ +/, ""); print }')" \
		$@ docs/$*.md

install: lathist man
	install -D -m 0755 lathist $(DESTDIR)$(PREFIX)/sbin/lathist
	install -d $(DESTDIR)$(PREFIX)/share/man/man8
	install -m 0644 $(MANS) $(DESTDIR)$(PREFIX)/share/man/man8/
	install -d $(DESTDIR)$(PREFIX)/lib/systemd/system $(DESTDIR)$(PREFIX)/share/lathist
	sed 's|/usr/local/sbin/lathist|$(PREFIX)/sbin/lathist|' contrib/lathist.service \
		> $(DESTDIR)$(PREFIX)/lib/systemd/system/lathist.service
	install -m 0644 contrib/grafana-lathist.json $(DESTDIR)$(PREFIX)/share/lathist/

# ---- maintenance ----
vmlinux:
	$(BPFTOOL) btf dump file /sys/kernel/btf/vmlinux format c > vmlinux/$(ARCH)/vmlinux.h

$(OUT)/bench:
	@mkdir -p $@

$(OUT)/bench/empty.bpf.o: bench/empty.bpf.c | $(OUT)/bench
	$(CLANG) $(BPF_CFLAGS) -c $< -o $@

$(OUT)/bench/empty.skel.h: $(OUT)/bench/empty.bpf.o
	$(BPFTOOL) gen skeleton $< name empty_bpf > $@.tmp && mv $@.tmp $@

$(OUT)/bench/empty: bench/empty.c $(OUT)/bench/empty.skel.h
	$(CC) $(CFLAGS) -I$(OUT)/bench $< $(LIBS) -o $@

$(OUT)/bench/sleepers: bench/sleepers.c | $(OUT)/bench
	$(CC) $(CFLAGS) $< -lpthread -o $@

# the runq hot path against another revision's build, interleaved (BASE: a git rev)
BASE ?= HEAD
bench-compare: deps
	@scripts/deps.sh bench
	@$(MAKE) --no-print-directory lathist
	@rm -rf $(OUT)/base && mkdir -p $(OUT)/base && git archive $(BASE) | tar -x -C $(OUT)/base
	@$(MAKE) --no-print-directory -C $(OUT)/base lathist >/dev/null
	$(PYTHON) bench/runq_compare.py $(OUT)/base/lathist

# the loader against another revision's build, interleaved (BASE: a git rev)
bench-loader: deps
	@scripts/deps.sh bench
	@$(MAKE) --no-print-directory lathist $(OUT)/bench/sleepers
	@rm -rf $(OUT)/base && mkdir -p $(OUT)/base && git archive $(BASE) | tar -x -C $(OUT)/base
	@$(MAKE) --no-print-directory -C $(OUT)/base lathist >/dev/null
	$(PYTHON) bench/loader_overhead.py $(OUT)/base/lathist

bench: deps
	@scripts/deps.sh bench
	@$(MAKE) --no-print-directory lathist $(OUT)/bench/empty $(OUT)/tests/runqwork
ifneq ($(filter command line environment,$(origin BASE)),)
	@git rev-parse -q --verify '$(BASE)^{commit}' >/dev/null || { echo "make bench: BASE='$(BASE)' is not a commit of this repository; give e.g. BASE=HEAD~1, or leave BASE out" >&2; exit 2; }
	@rm -rf $(OUT)/base && mkdir -p $(OUT)/base && git archive $(BASE) | tar -x -C $(OUT)/base
	@$(MAKE) --no-print-directory -C $(OUT)/base lathist >/dev/null
	BASE_LATHIST=$(abspath $(OUT)/base/lathist) $(PYTHON) bench/table.py
else
	$(PYTHON) bench/table.py
endif

bench-detail: deps
	@scripts/deps.sh bench
	@$(MAKE) --no-print-directory lathist $(OUT)/bench/empty $(OUT)/tests/runqwork $(OUT)/tests/biowork
	$(PYTHON) bench/runq_overhead.py
	$(PYTHON) bench/bio_overhead.py
	$(PYTHON) bench/records_overhead.py
	$(PYTHON) bench/counters_overhead.py
	$(PYTHON) bench/serve_overhead.py

clean:
	rm -rf $(OUT) lathist
