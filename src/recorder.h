/* SPDX-License-Identifier: MIT */
/*
 * The loader's side of per-event records (--slower-than): reads the BPF ring
 * buffer with libbpf's ring_buffer API and writes one line per record, text or
 * JSON, to a file or a standard stream. Lines are written whole (a buffer of
 * whole lines, write(2) when full and at each drain), so a killed run leaves
 * no torn line.
 */
#ifndef LATHIST_RECORDER_H
#define LATHIST_RECORDER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "util.h"

/*
 * Format one record (size bytes, as the BPF program wrote it) into buf: a
 * line ending in '\n', text or a JSON object. Returns the length it needs
 * (snprintf-like; >= len means it did not fit), 0 to skip the record.
 */
typedef int (*lh_format_record_fn)(void *ctx, const void *data, size_t size, bool json,
				   char *buf, size_t len);

struct ring_buffer;

struct lh_recorder {
	struct ring_buffer *rb;
	struct lh_lines out;		/* where lines go: --events FILE, stdout or stderr */
	bool json;			/* JSON lines (--events) or text lines */
	char *buf;			/* whole lines not written yet */
	size_t used, cap;
	const char *tool;		/* for messages */
	const char *path;		/* --events FILE, NULL for a standard stream */
	uint64_t delivered;		/* records read since the last drain */
	uint64_t drain_until_ns;	/* draining: stop after a record newer than this */
	uint64_t stop_ns;		/* polling: stop reading at this CLOCK_MONOTONIC time */
	uint32_t unclocked;		/* records read, for looking at the clock every few */
	uint32_t delay_us;		/* test only: sleep per record (a slow consumer) */
	lh_format_record_fn format;
	void *ctx;
};

/*
 * Start reading ring buffer map_fd. path: --events FILE (JSON lines, created
 * or truncated, never through a symlink; "-" is stdout), or NULL for text
 * lines on fd.
 * Negative errno (with a message naming tool) on failure.
 */
int lh_recorder_open(struct lh_recorder *r, const char *tool, int map_fd, const char *path,
		     int fd, lh_format_record_fn format, void *ctx);

/* Wait for records at most 100 ms, and not past deadline_ns (CLOCK_MONOTONIC), then
 * read what waits in the ring buffer for at most another 100 ms (records keep coming
 * while it reads), and write its lines: 200 ms a call at most; returns early on a signal.
 * Call it in a loop: records are submitted without a wakeup until a quarter of the
 * ring buffer waits, so it must look regularly. */
void lh_recorder_poll(struct lh_recorder *r, uint64_t deadline_ns);

/*
 * Read what is in the ring buffer now (with programs still running, stop at the
 * first record newer than until_ns; 0 = read all), write it out and return the
 * records read since the last drain in *delivered. Negative errno once writing
 * has failed (said once, when it happened; records are then counted only).
 */
int lh_recorder_drain(struct lh_recorder *r, uint64_t until_ns, uint64_t *delivered);

/* Free the ring buffer reader and close the file. */
void lh_recorder_close(struct lh_recorder *r);

#endif /* LATHIST_RECORDER_H */
