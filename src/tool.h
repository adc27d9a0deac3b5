/* SPDX-License-Identifier: MIT */
/* What every tracing verb does the same way: emit a report, explain failures. */
#ifndef LATHIST_TOOL_H
#define LATHIST_TOOL_H

#include <bpf/libbpf.h>
#include "cli.h"
#include "report.h"

/*
 * Render r in the chosen format to stdout, or replace -o FILE atomically.
 * JSON on stdout in interval mode is one compact line per interval (JSON
 * lines). Returns 0 or a negative errno, reported on stderr in one line (the
 * last good file stays in place).
 */
int lh_emit(const struct lh_report *r, const struct lh_common_opts *o);

/* At the end of a run: when its last reports could not be written (-o FILE, or
 * stdout; a failure said once, at the first of them), one line says how many, and
 * that the file is older than the run's end. Nothing after a closed pipe. */
void lh_emit_end(const char *who, const struct lh_common_opts *o);

/* Write len bytes of buf to output (replaced atomically; NULL: stdout), as lh_emit
 * does; a failure is one line naming who ("report"). 0 or negative errno. */
int lh_emit_bytes(const char *who, const char *output, const char *buf, size_t len);

/* Set by main when the process started with standard output closed. */
extern bool lh_stdout_closed;
/* Set when a write to standard output (a report, records) found the pipe closed
 * (EPIPE), which was said then: nothing more is written there, or said of it. */
extern bool lh_stdout_gone;

/*
 * Before opening any BPF object: privileges and BTF, each a one-line
 * diagnosis on failure (returns -EPERM/-ENOENT); sets up libbpf's logging.
 */
int lh_preflight(const char *tool, const struct lh_common_opts *o);

/* A program and where its skeleton keeps its link. */
struct lh_prog_link {
	struct bpf_program *prog;
	struct bpf_link **link;
};

/*
 * Attach, in the order given, every program set to load (autoload), storing
 * each link for the skeleton's destroy. On failure one line names the program;
 * returns 0 or a negative errno.
 */
int lh_attach_in_order(const char *tool, const struct lh_prog_link *progs, size_t n, bool verbose);

/*
 * The attach types a tool tries, in order, into out[0..1]: for --attach auto,
 * tp_btf when btf_ok, then raw_tp; an explicit type alone. Returns how many
 * (1..2), or 0 after one line saying why the requested type cannot run
 * (btf_why: what tp_btf lacks here, e.g. "BPF task storage (5.11+)").
 */
int lh_attach_candidates(const char *tool, enum lh_attach_mode mode, bool btf_ok,
			 const char *btf_why, enum lh_attach_mode out[2]);

/* How a tool opens, configures, loads and destroys its skeleton (lh_load_first). */
struct lh_skel_ops {
	void *(*open)(void);		/* NULL with errno on failure */
	/* options and map sizes for attach type t; returns the histogram map value size */
	size_t (*configure)(void *skel, void *tool, enum lh_attach_mode t);
	int (*load)(void *skel);	/* negative errno */
	void (*destroy)(void *skel);
};

/*
 * Open, configure and load the skeleton as types[0..n) in turn until one
 * loads; LATHIST_TEST=reject=TYPE fails a type's load with -EINVAL. A type that fails
 * while another follows is said in one line and destroyed; -EPERM without the
 * privileges, or -ESRCH with no loadable kernel BTF, stops at once (every type
 * would fail alike; EPERM with them is a kernel restriction on one program). *skel, *type and *value_size describe
 * the last one tried. Returns 0 or the load's negative errno (*skel then
 * stays, for lh_session_main's diagnosis and the caller's destroy), or -errno
 * with *skel NULL when the object cannot be opened (said).
 */
int lh_load_first(const char *tool, const struct lh_common_opts *o,
		  const enum lh_attach_mode *types, int n, const struct lh_skel_ops *ops,
		  void *ctx, void **skel, enum lh_attach_mode *type, size_t *value_size);

/* One-line diagnosis of a failed skeleton load (err: negative errno). */
void lh_load_error(const char *tool, int err, bool verbose);

struct option;

/* One-line error for getopt's '?' (unknown or ambiguous option, named with
 * the longopts it could be) or ':' (missing value). */
void lh_bad_option(const char *tool, int opt, char **argv, const struct option *longopts);

/* What a keyed map's keys are, for lh_auto_max_keys. */
enum lh_key_unit { LH_KEYS_THREADS, LH_KEYS_PROCESSES, LH_KEYS_FEW };

/*
 * Entries of a keyed map when its size is not given, sized to the machine
 * now: per_key entries for each of its keys (the kernel's thread count,
 * /proc/loadavg's nr_threads, which is not namespaced; or the processes in
 * /proc, or outside the initial PID namespace the host's threads again; times
 * mult, e.g. disks), times 2 for a map of interval halves (two_halves: both
 * halves hold a full set of entries while the old one is read, at an
 * interval's flip or an early read) or else 1.5 (keys born while tracing),
 * plus 1024; never below floor (0: none). A churn of short threads makes more keys
 * than the host has at once: the keyed histogram maps are read early for that
 * (session.c drain_due); a floor is for keys born after the start that are
 * all live at once (runq: a thread pool waking together). fallback is the size
 * when the count cannot be read (*keys 0); at most 1 << 24. A key past it is
 * counted (hist_map_full), never lost unseen. *keys gets the keys counted.
 */
uint32_t lh_auto_max_keys(enum lh_key_unit unit, uint32_t per_key, uint32_t mult,
			  bool two_halves, uint32_t fallback, uint32_t floor, uint32_t *keys);

#endif /* LATHIST_TOOL_H */
