// SPDX-License-Identifier: MIT
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <bpf/libbpf.h>
#include "records.h"
#include "recorder.h"
#include "tool.h"
#include "util.h"

#define LINE_MAX_BYTES 1024
#define BUF_BYTES (64 * 1024)
#define CLOCK_EVERY 16		/* records read between looks at the clock (stop_ns) */

/*
 * Write out the whole lines buffered. On the first failure (disk full, closed
 * pipe) the error is said once, a file is cut back to its last whole line
 * (lh_lines_write), and later records are counted but not written (a closed
 * pipe, EPIPE, ends the run: lh_session_run).
 */
static void flush_lines(struct lh_recorder *r)
{
	int err = r->out.err ? 0 : lh_lines_write(&r->out, r->buf, r->used);

	if (err)
		fprintf(stderr, "lathist %s: writing the records to %s failed: %s; %s\n", r->tool,
			r->path && strcmp(r->path, "-") ? r->path :
			r->out.fd == STDOUT_FILENO ? "stdout" : "stderr",
			strerror(-err), err == -EPIPE ? "nobody reads them any more: the run ends" :
			"tracing goes on, records are counted but no longer written");
	if (err == -EPIPE && r->out.fd == STDOUT_FILENO)
		lh_stdout_gone = true;	/* the report is not written there after it */
	r->used = 0;
}

/*
 * libbpf's callback for one record. A negative return stops libbpf's loop (the
 * record is consumed): records keep coming while we read them (with
 * --slower-than 0 our own wakeups are events too), so a read stops at stop_ns
 * (looked at every CLOCK_EVERY records) and, when draining, at the first
 * record newer than drain_until_ns.
 */
static int on_record(void *ctx, void *data, size_t size)
{
	const struct lh_record_head *h = data;
	struct lh_recorder *r = ctx;
	int n;

	r->delivered++;
	if (r->out.err)
		goto next;	/* writing failed earlier: counted only */
	if (r->cap - r->used < LINE_MAX_BYTES)
		flush_lines(r);
	n = r->format(r->ctx, data, size, r->json, r->buf + r->used, r->cap - r->used);
	if (n > 0 && (size_t)n < r->cap - r->used)
		r->used += (size_t)n;
next:
	if (r->delay_us)
		usleep(r->delay_us);
	if (r->drain_until_ns && size >= sizeof(*h) && h->ts_ns > r->drain_until_ns)
		return -EAGAIN;
	/* the clock every CLOCK_EVERY records (every one when each sleeps): a
	 * read stops at most that many records (tens of us) past stop_ns */
	if (r->stop_ns && (r->delay_us || !(++r->unclocked % CLOCK_EVERY)) &&
	    lh_now_ns() >= r->stop_ns)
		return -EAGAIN;
	return 0;
}

int lh_recorder_open(struct lh_recorder *r, const char *tool, int map_fd, const char *path,
		     int fd, lh_format_record_fn format, void *ctx)
{
	int err;

	r->format = format;
	r->ctx = ctx;
	r->tool = tool;
	r->path = path;
	r->json = path != NULL;
	r->cap = BUF_BYTES;
	r->buf = malloc(r->cap);
	if (!r->buf)
		return -ENOMEM;
	if (path && !strcmp(path, "-")) {
		lh_lines_use(&r->out, STDOUT_FILENO);
	} else if (path) {
		err = lh_lines_open(&r->out, path);
		if (err) {
			fprintf(stderr, "lathist %s: cannot open --events %s: %s\n", tool, path,
				strerror(-err));
			return err;
		}
	} else {
		lh_lines_use(&r->out, fd);
	}
	r->rb = ring_buffer__new(map_fd, on_record, r, NULL);
	if (!r->rb) {
		err = -errno;
		fprintf(stderr, "lathist %s: cannot read the ring buffer: %s\n", tool,
			strerror(-err));
		return err;
	}
	return 0;
}

/* deadline_ns, or 100 ms from now when that is sooner: how long one read may go on */
static uint64_t look_end(uint64_t deadline_ns)
{
	uint64_t now = lh_now_ns();

	return now < deadline_ns && deadline_ns - now > 100000000ULL ? now + 100000000ULL :
	       deadline_ns;
}

void lh_recorder_poll(struct lh_recorder *r, uint64_t deadline_ns)
{
	uint64_t now = lh_now_ns();
	int ms;

	if (now >= deadline_ns)
		return;
	ms = (int)((deadline_ns - now + 999999) / 1000000);
	/* each read goes on for 100 ms at most: records keep coming while they are read
	 * (a slow consumer's own wakeups are events), and the caller checks a signal, an
	 * early drain and a closed pipe between looks */
	r->stop_ns = look_end(deadline_ns);
	/* the poll reads a ring only when the kernel woke it, which records submitted with
	 * BPF_RB_NO_WAKEUP never do below a quarter of the ring: what waits is read after */
	if (ring_buffer__poll(r->rb, ms < 100 ? ms : 100) >= 0 && lh_now_ns() < deadline_ns) {
		r->stop_ns = look_end(deadline_ns);
		ring_buffer__consume(r->rb);
	}
	r->stop_ns = 0;
	flush_lines(r);		/* lines reach the file or pipe within ~100 ms */
}

int lh_recorder_drain(struct lh_recorder *r, uint64_t until_ns, uint64_t *delivered)
{
	r->drain_until_ns = until_ns;
	ring_buffer__consume(r->rb);
	r->drain_until_ns = 0;
	if (r->out.fd == STDOUT_FILENO)
		fflush(stdout);		/* what stdio holds comes first */
	flush_lines(r);
	*delivered = r->delivered;
	r->delivered = 0;
	return -r->out.err;
}

void lh_recorder_close(struct lh_recorder *r)
{
	ring_buffer__free(r->rb);
	r->rb = NULL;
	lh_lines_close(&r->out);
	free(r->buf);
	r->buf = NULL;
}
