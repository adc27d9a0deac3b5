/* SPDX-License-Identifier: MIT */
/*
 * One tracing run, shared by every tool: metadata, the interval loop (flip the
 * double buffer, wait for BPF readers, read counters and histograms, render),
 * signals, and per-CPU map reading. A tool opens, configures, loads and
 * attaches its skeleton, fills the hooks and calls lh_session_run().
 */
#ifndef LATHIST_SESSION_H
#define LATHIST_SESSION_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <bpf/libbpf.h>
#include "cli.h"
#include "anonymize.h"
#include "recorder.h"
#include "report.h"

/* lh_read_keyed's state and buffers, kept across intervals (no allocation per key). */
struct lh_keyed_read {
	int batch;			/* batch map operations: 0 untried, 1 used, -1 not here */
	void *keys, *values;		/* one batch: keys, and each key's per-CPU values */
	size_t keys_bytes, values_bytes;
	void *tok;			/* the batch positions, in and out */
	size_t tok_bytes;
	void *del;			/* keys read from the half, deleted after each batch */
	size_t del_bytes, ndel;		/* bytes allocated, keys in it */
	int copies;			/* copies of each value the map being read returns:
					 * ncpus for a per-CPU map, 1 for a shared one */
};

struct lh_session {
	const struct lh_common_opts *c;
	struct bpf_object *obj;
	volatile uint32_t *hist_buf;	/* the object's .bss hist_buf */
	volatile bool *enabled;		/* the object's .bss lh_enabled */
	volatile unsigned long long *start_ns;	/* the object's .bss lh_start_ns */
	int counters_fd;		/* lathist_counters map */
	int ncpus;			/* possible CPUs */
	size_t value_size;		/* histogram map value: head + 8 * nslots */
	size_t max_value_size;		/* the tool's largest other per-CPU value, for percpu_buf */
	void *percpu_buf;		/* ncpus * stride bytes, for one per-CPU value */
	struct lh_report report;
	/* Read half 'buf' of the tool's histogram maps into report and empty it;
	 * negative errno on failure. */
	int (*read_hists)(struct lh_session *s, uint32_t buf);
	/* Optional: run once just after tracing begins and once just before the
	 * last read, programs running (runq: its sweeps of every task's switch
	 * count); last tells which. */
	void (*sweep)(struct lh_session *s, bool last);
	/* Optional: run once when every program is attached, before tracing is
	 * enabled (runq: task storage made for every traced task). */
	void (*prepare)(struct lh_session *s);
	/* Format one ring buffer record (--slower-than); ctx is the session. */
	lh_format_record_fn format_record;
	void *tool;			/* the tool's own context */
	struct lh_recorder recorder;	/* records, when --slower-than is given */
	bool records_failed;		/* writing the records failed (exit 1) */
	struct lh_anon anon;		/* --anonymize: the salt */
	struct lh_report cum;		/* -i into openmetrics/prometheus: totals since start */
	struct lh_lines series;		/* --series FILE, opened at the first interval */
	uint64_t *trend_events, *trend_lost;	/* per interval, for the loss trend */
	size_t ntrend;
	uint64_t prog_misses;		/* the programs' recursion_misses at the last read */
	struct lh_keyed_read keyed;	/* lh_read_keyed */
	/* Keyed maps read early (drain_due in session.c): the object's .bss
	 * lh_keys_made (entries made over the run), its value at the last flip,
	 * and how many the half being written may make before it is read early
	 * (lh_session_read_early: half the keyed map; 0 = never). The
	 * halves read early wait in held for the end of their interval. */
	volatile unsigned long long *keys_made, *drain_at;
	struct ring_buffer *wake_rb;	/* lathist_wake: its records end wait_until */
	uint64_t keys_at_flip, drain_keys, ndrains;
	struct lh_report held;
	bool held_any;
};

/*
 * Where a session's intervals go instead of its outputs (lathist serve): set
 * in the thread that runs a tool's main, before it runs.
 */
struct lh_sink {
	/* once every program is attached, tracing, before the first interval */
	void (*attached)(struct lh_sink *k, struct lh_session *s);
	/* each interval's aggregate (s->report), in place of the outputs; 0 or a
	 * negative errno, which ends the run */
	int (*interval)(struct lh_sink *k, struct lh_session *s);
};
extern __thread struct lh_sink *lh_session_sink;

/* Install the SIGINT/SIGTERM handlers that end every session cleanly (done by
 * lh_session_init too); lh_session_exiting() says when one came. */
void lh_session_signals(void);
bool lh_session_exiting(void);

/* -p names the process that had the pid when tracing began: its start time
 * (lathist.bpf.h lh_born_at), so that a pid reused later is not traced. */
#define LH_SET_BIRTH_FILTER(rodata, c)                             \
	do {                                                       \
		(rodata)->filter_tgid_ticks = (c)->pid_ticks;      \
		(rodata)->tick_ns = lh_tick_ns();                  \
		(rodata)->boot_off_ns = lh_timens_boottime_ns();   \
	} while (0)

/* Point the session at a loaded skeleton's shared .bss variables (lathist.bpf.h). */
#define LH_SESSION_BIND(s, skel)                          \
	do {                                              \
		(s)->hist_buf = &(skel)->bss->hist_buf;   \
		(s)->enabled = &(skel)->bss->lh_enabled;  \
		(s)->start_ns = &(skel)->bss->lh_start_ns; \
		(s)->keys_made = &(skel)->bss->lh_keys_made; \
		(s)->drain_at = &(skel)->data->lh_drain_at; \
	} while (0)

/*
 * Read the keyed histogram map (max_entries) early whenever the half being
 * written has made half its entries (drain_due in session.c). The map is
 * sized for two full sets of the live keys (lh_auto_max_keys: keys x 2 +
 * 1024), as both halves hold entries while the old one is read: the live set
 * alone never reaches half, and a read early leaves the next half as much
 * room as the one being read. --max-keys 1 reads early at every new key.
 */
void lh_session_read_early(struct lh_session *s, uint32_t max_entries);

/* Fill meta common to all tools (kernel, clock, scheme, CPUs, -p/--cgroup filters);
 * from here on SIGINT/SIGTERM end the run cleanly. */
void lh_session_init(struct lh_session *s, const struct lh_common_opts *c, const char *tool,
		     const struct lh_hist_kind *kinds, int nkinds, const char *grouping);

/* Append a filter to meta ("pid", numeric) with a printf-style value. */
void lh_meta_add_filter(struct lh_meta *m, const char *name, bool numeric, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

/* --per-cgroup (on): load the cgroup_mkdir program (mkdir) and size the
 * paths it keeps (lathist.bpf.h lathist_cgroup_paths); off: the map at its
 * smallest, the program not loaded. Before load. */
void lh_session_configure_cgroups(struct bpf_map *paths, struct bpf_program *mkdir, bool on);

/* After attach, with --per-cgroup (mkdir loaded): name every cgroup there is
 * now (lh_cgroup_scan), those made since being kept by the mkdir program. */
void lh_session_cgroups_attached(struct bpf_program *mkdir);

/* Size the shared ring buffer and set the record options before load. */
void lh_session_configure_records(const struct lh_common_opts *c, struct bpf_map *events,
				  volatile unsigned long long *slower_than_ns,
				  volatile unsigned long long *wakeup_bytes);

/* After load: the map value size, buffers, map sizes for meta (and -v), the record
 * consumer. Negative errno (reported) on failure. */
int lh_session_loaded(struct lh_session *s, struct bpf_object *obj, size_t value_size);

/* After attach: enable the programs, say "Tracing <what>..." on stderr. */
void lh_session_attached(struct lh_session *s, const char *what);

/* Trace until -d, a signal, or forever; emit per interval and at the end. 0, or
 * the first negative errno of a failed read or write (writes go on after one). */
int lh_session_run(struct lh_session *s);

void lh_session_free(struct lh_session *s);

/*
 * Everything after a tool's skeleton load, the same for every tool: diagnose a
 * failed load (load_err, negative errno), size buffers and record the maps,
 * attach (attach(skel, verbose)), enable, trace, free the session. The tool
 * binds the .bss variables (LH_SESSION_BIND) after a successful load and
 * destroys its skeleton afterwards. Returns the exit status.
 */
int lh_session_main(struct lh_session *s, int load_err, struct bpf_object *obj,
		    size_t value_size, int (*attach)(void *skel, bool verbose), void *skel,
		    const char *what);

/*
 * Read and empty one half of a keyed hash (of histograms, lost counts,
 * counter sums): for every key whose byte at buf_off equals buf, call
 * add(s, key, values) with its value (s->keyed.copies copies of value_size
 * bytes, each rounded up to 8: ncpus for a per-CPU hash, 1 for a shared one),
 * then delete those keys; the other half's keys stay.
 * The map is read in batches (bpf_map_lookup_batch over the whole map, each
 * batch's keys of the half deleted by bpf_map_delete_batch before the next
 * batch is read), or key by key on a kernel without
 * batch operations (before 5.6) or under LATHIST_TEST=no-batch. Buffers are
 * kept in s->keyed for the next interval. A key whose values were added is
 * deleted even when a later add fails, so none is counted twice. Returns 0 or
 * the first negative errno of the map or of add.
 */
int lh_read_keyed(struct lh_session *s, int fd, size_t key_size, size_t value_size,
		  size_t buf_off, uint32_t buf,
		  int (*add)(struct lh_session *s, const void *key, const void *values));

/*
 * Add every CPU's copy of the histogram at byte offset 'offset' of a per-CPU
 * value (values: ncpus copies of value_size, 8-byte aligned) into a new
 * histogram name/key; -ENOMEM.
 */
int lh_session_add_percpu(struct lh_session *s, const char *name, const struct lh_key *key,
			  const void *values, size_t offset);

/* The same for a value of copies copies (1: a map that all CPUs share). */
int lh_session_add_copies(struct lh_session *s, const char *name, const struct lh_key *key,
			  const void *values, size_t offset, int copies);

#endif /* LATHIST_SESSION_H */
