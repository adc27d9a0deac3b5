/* SPDX-License-Identifier: MIT */
/* Parsing of option values and atomic output files. */
#ifndef LATHIST_UTIL_H
#define LATHIST_UTIL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/*
 * Parse a duration: a decimal number of seconds ("5", "0.5") or a number with
 * a unit suffix ns, us, ms, s, m (minutes) or h ("250us", "10m"), decimal digits
 * only. Returns 0 and *ns, -EINVAL (garbage, negative, zero when !allow_zero),
 * -EDOM (under 1 ns but not 0: not rounded) or -ERANGE (over 10^7 s).
 */
int lh_parse_duration(const char *s, bool allow_zero, uint64_t *ns);

/* ns as a duration lh_parse_duration reads back: in the largest of s, ms,
 * us, ns that it is a whole number of ("256us", "2s"), else in the largest
 * unit below it with decimals ("1.048576s"); into buf (len bytes), returned. */
const char *lh_duration_str(uint64_t ns, char *buf, size_t len);

/* Parse a decimal in [min, max]: digits, with an optional leading '-' (no white
 * space, no '+'). -EINVAL when s is not that, -ERANGE when it is a whole number
 * outside [min, max] (a negative one too; "-0" is 0). */
int lh_parse_u32(const char *s, uint32_t min, uint32_t max, uint32_t *v);

/* Parse a unit name ns|us|ms into nanoseconds per unit; -EINVAL otherwise. */
int lh_parse_unit(const char *s, uint64_t *unit_ns);

/*
 * Parse a CPU list ("0-3,7") into a bit mask of nwords 64-bit words.
 * CPUs must be below ncpus. Returns 0, -EINVAL (syntax), or -ERANGE with the
 * offending CPU in *bad.
 */
int lh_parse_cpulist(const char *s, uint64_t *mask, size_t nwords, int ncpus, long *bad);

/* The canonical form of a CPU mask of nwords 64-bit words: ascending, ranges
 * merged ("0-3,7"), whatever order or repeats the list came with; "N CPUs"
 * when that does not fit in len bytes. */
void lh_format_cpulist(const uint64_t *mask, size_t nwords, char *buf, size_t len);

#define LH_MAX_CPU_WORDS 16	/* CPU masks: 1024 CPUs */

/* The online CPUs (/sys/devices/system/cpu/online) below ncpus as a mask of
 * nwords words; negative errno when the file cannot be read or parsed. */
int lh_online_cpus(uint64_t *mask, size_t nwords, int ncpus);

/*
 * Check before tracing that path can be written later: its folder exists and
 * takes a new file (one is created and removed to know), and path is a
 * regular file with one name (no other hard link) or does not exist yet.
 * atomic: it is written through a temporary name in its folder
 * (lh_write_atomic: -o, --heatmap), whose bytes its name and path must leave
 * room for; else it is opened as it is (--events, --series).
 * Returns 0 or a negative errno (-ELOOP for a symlink, -EISDIR for a folder or
 * a name ending in '/', -EINVAL for a device, FIFO or socket, -EMLINK for a
 * file with hard links, -ENAMETOOLONG for a name over lh_output_name_max or a
 * path that with the temporary name's bytes reaches PATH_MAX, or a folder of a
 * name too long, -ENOENT, -EACCES).
 * One rule for every output: what lathist writes never changes another name.
 */
int lh_output_check(const char *path, bool atomic);

/* Bytes lh_write_atomic's temporary name adds to a file's name in this process:
 * ".NAME.PID.N" with N < 100 (mkstemp's ".NAME.XXXXXX" adds 8). */
size_t lh_tmp_name_extra(void);

/* The length of path's last component (its name, bytes). */
size_t lh_output_name_len(const char *path);

/* The longest name an output may have in folder dir: the folder's NAME_MAX
 * (pathconf), less lh_tmp_name_extra() for an atomic one. */
size_t lh_output_name_max(const char *dir, bool atomic);

/*
 * Replace path atomically with len bytes of data: write an unnamed file
 * (O_TMPFILE, else a named temporary) in the same folder, fsync, name it,
 * rename it over path. The new file keeps the old one's mode and owner (a new
 * one gets 0666 less the umask). Refuses a symlink (-ELOOP), a file with
 * other hard links (-EMLINK) and anything not a regular file (-EINVAL, -EISDIR). Returns 0 or a negative errno; on error path is left as
 * it was.
 */
int lh_write_atomic(const char *path, const char *data, size_t len);

/*
 * lh_write_atomic with the content written by fill(fd, ctx) (0 or -errno)
 * into the unnamed file, for output too large to build in memory first. Same
 * errors, and fill's.
 */
int lh_write_atomic_with(const char *path, int (*fill)(int fd, void *ctx), void *ctx);

/*
 * Task tid's start time as /proc/TID/stat shows it (field 22: clock ticks of
 * sysconf(_SC_CLK_TCK) since boot; the kernel's task->start_boottime, plus a
 * time namespace's boottime offset, divided by NSEC_PER_SEC / USER_HZ).
 * 0, or -ENOENT when the task is gone, -ESRCH when it has exited but is not
 * reaped yet (a zombie; *ticks is set), another negative errno on a bad read.
 */
int lh_task_start_ticks(uint32_t tid, uint64_t *ticks);

/* The same for process pid (its main thread's start): a main thread that has
 * exited (pthread_exit: a zombie leader) while another thread of the process
 * runs on is a process still running (0), not -ESRCH. */
int lh_process_start_ticks(uint32_t pid, uint64_t *ticks);

/* Nanoseconds per /proc clock tick (NSEC_PER_SEC / sysconf(_SC_CLK_TCK)). */
uint64_t lh_tick_ns(void);

/* This process's time namespace boottime offset in ns (/proc/self/timens_offsets;
 * 0 without one): /proc start times include it. */
int64_t lh_timens_boottime_ns(void);

/*
 * Is the task with this id the one that started at start_mono_ns (its
 * task_struct start_time, CLOCK_MONOTONIC, as BPF reads it) and not gone?
 * /proc/ID/stat's starttime is boot-based, in clock ticks: compared within two
 * ticks through the clocks' offset now (a suspend since the task started can
 * make a live task look gone).
 */
bool lh_task_alive(uint32_t tid, uint64_t start_mono_ns);

/* The same for process pid (lh_process_start_ticks). */
bool lh_process_alive(uint32_t pid, uint64_t start_mono_ns);

/* A new run id in out: 32 lowercase hex digits of 16 random bytes (getrandom;
 * the realtime clock and pid if that fails) and a NUL. */
void lh_run_id(char out[33]);

/* Is s exactly 32 lowercase hex digits (a run id)? */
bool lh_is_run_id(const char *s);

/*
 * The offset of the first byte of s that does not belong in printable UTF-8 text: a
 * control character (below 0x20, 0x7f, or U+0080..U+009F) or a sequence that is not well-formed UTF-8
 * (RFC 3629: no overlong forms, no surrogates, nothing past U+10FFFF); -1 when there is
 * none. OpenMetrics label values must be UTF-8 (the OpenMetrics 1.0 text format).
 */
long lh_bad_text_byte(const char *s);

/* Is path dir itself or below it (dir without a trailing slash)? */
bool lh_path_under(const char *path, const char *dir);

/* Does the comma-separated list s have an empty entry (s empty, a leading or
 * trailing comma, two in a row)? strtok_r would skip it silently. */
bool lh_list_has_empty(const char *s);

/* Nanoseconds of CLOCK_MONOTONIC / CLOCK_REALTIME. */
uint64_t lh_now_ns(void);
uint64_t lh_realtime_ns(void);

/*
 * A stream of whole lines into a file or a standard stream (--events,
 * --series). Callers write whole lines only; a write that fails cuts a file
 * back to its last whole line (no torn line), and the error sticks.
 */
struct lh_lines {
	int fd;
	bool own;		/* opened by lh_lines_open: truncated on failure, closed */
	off_t whole;		/* bytes of whole lines written (own files) */
	int err;		/* first write error (errno), 0 if none */
};

/* Create or truncate path for writing, never through a symlink, and not a
 * file that is not regular (-EINVAL) or has other hard links (-EMLINK): it is
 * truncated only once it is known to be neither. Negative errno. */
int lh_lines_open(struct lh_lines *l, const char *path);

/* Use an open descriptor (stdout, stderr): never truncated or closed here. */
void lh_lines_use(struct lh_lines *l, int fd);

/* Write len bytes of whole lines: 0, or the negative errno of this failure
 * (l->err is then set; later calls write nothing and return it again). */
int lh_lines_write(struct lh_lines *l, const char *buf, size_t len);

void lh_lines_close(struct lh_lines *l);

#endif /* LATHIST_UTIL_H */
