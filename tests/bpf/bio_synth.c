// SPDX-License-Identifier: MIT
/*
 * Runs lathist's bio raw_tp programs with BPF_PROG_TEST_RUN on fake requests
 * (tests/bpf/fakerq.bpf.c) through sequences real devices here cannot produce:
 * partial completions, a request pointer reused right after completion, a
 * pointer reused after a merge. Prints one JSON line per step with the
 * counters and the total histogram (count, bytes, max_ns). "filtered": a
 * -p run; "queue-arg": the programs as loaded for a kernel whose
 * block_rq_insert and block_rq_issue still pass the request_queue first
 * (before 5.11: core_fixes.bpf.h).
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>
#include "bio.h"
#include "bio.skel.h"
#include "bpfcommon.h"
#include "counters.h"
#include "fakerq.skel.h"
#include "hist_slot.h"

static struct bio_bpf *bio;
static struct fakerq_bpf *fake;
static int ncpus;

/* Fake request `which` with __data_len len, REQ_OP op, at start sector; its address. */
static unsigned long long fake_request_at(unsigned int which, unsigned int len, unsigned int op,
					  unsigned long long sector)
{
	LIBBPF_OPTS(bpf_test_run_opts, o);
	unsigned long long args[1] = { 0 };

	fake->bss->sector = sector;
	fake->bss->which = which;
	fake->bss->data_len = len;
	fake->bss->cmd_flags = op;
	o.ctx_in = args;
	o.ctx_size_in = sizeof(args);
	if (bpf_prog_test_run_opts(bpf_program__fd(fake->progs.fakerq_set), &o) || o.retval) {
		fprintf(stderr, "bio_synth: fakerq_set: %s\n", strerror(errno));
		exit(1);
	}
	return fake->bss->addr;
}

static unsigned long long fake_request(unsigned int which, unsigned int len, unsigned int op)
{
	return fake_request_at(which, len, op, 8ULL * which);
}

static void run(struct bpf_program *p, unsigned long long a0, unsigned long long a1,
		unsigned long long a2, int nargs)
{
	LIBBPF_OPTS(bpf_test_run_opts, o);
	unsigned long long args[3] = { a0, a1, a2 };

	o.ctx_in = args;
	o.ctx_size_in = (unsigned int)(nargs * sizeof(args[0]));
	if (bpf_prog_test_run_opts(bpf_program__fd(p), &o)) {
		fprintf(stderr, "bio_synth: test run %s: %s\n", bpf_program__name(p), strerror(errno));
		exit(1);
	}
}

static void report(const char *step)
{
	size_t hsz = sizeof(struct lh_hist_head) + 8 * LH_NSLOTS(0), vsz = BIO_NR_HISTS * hsz;
	size_t stride = (vsz + 7) & ~7UL;
	struct lh_counters *pc = calloc((size_t)ncpus, sizeof(*pc));
	char *vals = calloc((size_t)ncpus, stride);
	unsigned long long v[LH_NR_COUNTERS] = {}, count = 0, bytes = 0, max = 0;
	struct bio_hist_key key = {};
	unsigned int zero = 0;

	bpf_map_lookup_elem(bpf_map__fd(bio->maps.lathist_counters), &zero, pc);	/* buffer 0 */
	for (int c = 0; c < ncpus; c++)
		for (int i = 0; i < LH_NR_COUNTERS; i++)
			v[i] += pc[c].v[i];
	if (!bpf_map_lookup_elem(bpf_map__fd(bio->maps.bio_hist), &key, vals)) {
		for (int c = 0; c < ncpus; c++) {
			struct lh_hist_head *h = (void *)(vals + (size_t)c * stride +
							  (BIO_TOTAL - 1) * hsz);
			unsigned long long *slots = (void *)(h + 1);

			for (unsigned int s = 0; s < LH_NSLOTS(0); s++)
				count += slots[s];
			bytes += h->bytes;
			if (h->max_ns > max)
				max = h->max_ns;
		}
	}
	printf("{\"step\":\"%s\",\"events\":%llu,\"paired\":%llu,\"created\":%llu,"
	       "\"requeued\":%llu,\"partial\":%llu,\"merged\":%llu,"
	       "\"before_trace\":%llu,\"overwritten\":%llu,\"missed_completion\":%llu,"
	       "\"lost\":%llu,\"total_count\":%llu,"
	       "\"total_bytes\":%llu,\"total_max_ns\":%llu}\n", step, v[LH_EV_ENDS],
	       v[LH_EV_PAIRED], v[LH_EV_BIO_CREATED], v[LH_EV_BIO_REQUEUED], v[LH_EV_BIO_PARTIAL], v[LH_EV_BIO_MERGED], v[LH_EV_BEFORE_TRACE],
	       v[LH_LOSS_OVERWRITTEN], v[LH_LOSS_MISSED_COMPLETION],
	       v[LH_LOSS_UNPAIRED] + v[LH_LOSS_OVERWRITTEN] + v[LH_LOSS_MISSED_COMPLETION] +
	       v[LH_LOSS_NEGATIVE] + v[LH_LOSS_ABSURD],
	       count, bytes, max);
	fflush(stdout);
	free(pc);
	free(vals);
}

int main(int argc, char **argv)
{
	bool filtered = argc > 1 && !strcmp(argv[1], "filtered");
	bool queue_arg = argc > 1 && !strcmp(argv[1], "queue-arg");
	size_t vsz = BIO_NR_HISTS * (sizeof(struct lh_hist_head) + 8 * LH_NSLOTS(0));
	unsigned long long r, r2;
	struct timespec ms50 = { 0, 50000000 };

	ncpus = libbpf_num_possible_cpus();
	fake = fakerq_bpf__open_and_load();
	bio = bio_bpf__open();
	if (!fake || !bio)
		return 1;
	bpf_map__set_value_size(bio->maps.bio_hist, vsz);
	bpf_map__set_value_size(bio->maps.lathist_zero_hist, vsz);
	/* only the raw_tp programs can be test-run */
	bpf_program__set_autoload(bio->progs.bio_io_start_btf, false);
	bpf_program__set_autoload(bio->progs.bio_insert_btf, false);
	bpf_program__set_autoload(bio->progs.bio_issue_btf, false);
	bpf_program__set_autoload(bio->progs.bio_complete_btf, false);
	bpf_program__set_autoload(bio->progs.bio_merge_btf, false);
	bpf_program__set_autoload(bio->progs.bio_sweep, true);	/* "?": asked for */
	if (filtered)	/* -p 1: this process's requests are left out */
		bio->rodata->filter_tgid = 1;
	bio->rodata->issue_has_q = bio->rodata->insert_has_q = queue_arg;
	if (bio_bpf__load(bio)) {
		fprintf(stderr, "bio_synth: cannot load bio programs\n");
		return 1;
	}
	bio->bss->lh_enabled = true;
	if (filtered) {
		/* a request the filter left out, issued, its completion with no event,
		 * the struct back for another: not a loss of this run */
		r = fake_request(0, 8192, 0);
		run(bio->progs.bio_io_start_raw, r, 0, 0, 1);
		run(bio->progs.bio_issue_raw, r, 0, 0, 1);
		run(bio->progs.bio_io_start_raw, r, 0, 0, 1);
		run(bio->progs.bio_issue_raw, r, 0, 0, 1);
		run(bio->progs.bio_complete_raw, r, 0, 8192, 3);
		report("filtered_missed_completion");
		return 0;
	}
	if (queue_arg) {
		/* (struct request_queue *q, struct request *rq): q is never read */
		r = fake_request(0, 8192, 0);
		run(bio->progs.bio_insert_raw, 0xdead0000ULL, r, 0, 2);
		run(bio->progs.bio_issue_raw, 0xdead0000ULL, r, 0, 2);
		run(bio->progs.bio_complete_raw, r, 0, 8192, 3);
		report("queue_argument");
		return 0;
	}

	/* C10: one request completed in two chunks counts once, with all its bytes */
	r = fake_request(0, 8192, 0);
	run(bio->progs.bio_io_start_raw, r, 0, 0, 1);
	run(bio->progs.bio_issue_raw, r, 0, 0, 1);
	run(bio->progs.bio_complete_raw, r, 0, 4096, 3);
	report("first_chunk");
	run(bio->progs.bio_complete_raw, r, 0, 4096, 3);
	report("second_chunk");

	/* the same pointer, reused right away for the next request */
	run(bio->progs.bio_io_start_raw, r, 0, 0, 1);
	run(bio->progs.bio_issue_raw, r, 0, 0, 1);
	run(bio->progs.bio_complete_raw, r, 0, 8192, 3);
	report("reused");

	/* created, merged away without block_rq_merge (older kernels), pointer reused
	 * 50 ms later: the new request's time starts at its own creation */
	run(bio->progs.bio_io_start_raw, r, 0, 0, 1);
	nanosleep(&ms50, NULL);
	run(bio->progs.bio_io_start_raw, r, 0, 0, 1);
	run(bio->progs.bio_issue_raw, r, 0, 0, 1);
	run(bio->progs.bio_complete_raw, r, 0, 8192, 3);
	report("reused_after_merge");

	/* merged with block_rq_merge: deleted, nothing counted for it */
	r2 = fake_request(1, 4096, 1);
	run(bio->progs.bio_io_start_raw, r2, 0, 0, 1);
	run(bio->progs.bio_merge_raw, r2, 0, 0, 1);
	run(bio->progs.bio_complete_raw, r2, 0, 4096, 3);
	report("merged_then_unknown_completion");

	/* created and issued, its completion came with no event, the struct back
	 * for a new request 50 ms later: a missed completion, and the new
	 * request's time starts at its own creation */
	run(bio->progs.bio_io_start_raw, r, 0, 0, 1);
	run(bio->progs.bio_issue_raw, r, 0, 0, 1);
	nanosleep(&ms50, NULL);
	run(bio->progs.bio_io_start_raw, r, 0, 0, 1);
	run(bio->progs.bio_issue_raw, r, 0, 0, 1);
	run(bio->progs.bio_complete_raw, r, 0, 8192, 3);
	report("completion_not_seen");

	/* before 6.5 (block_rq_insert starts a request): a request requeued by the
	 * driver is inserted again, still issued, at the same sector: it goes on,
	 * counted once with its requeue */
	run(bio->progs.bio_insert_raw, r, 0, 0, 1);
	run(bio->progs.bio_issue_raw, r, 0, 0, 1);
	run(bio->progs.bio_insert_raw, r, 0, 0, 1);
	run(bio->progs.bio_issue_raw, r, 0, 0, 1);
	run(bio->progs.bio_complete_raw, r, 0, 8192, 3);
	report("requeued_insert");

	/* inserted, issued, completed with no event; the struct back for a request
	 * at another sector: a missed completion */
	run(bio->progs.bio_insert_raw, r, 0, 0, 1);
	run(bio->progs.bio_issue_raw, r, 0, 0, 1);
	fake_request_at(0, 8192, 0, 800);
	run(bio->progs.bio_insert_raw, r, 0, 0, 1);
	run(bio->progs.bio_issue_raw, r, 0, 0, 1);
	run(bio->progs.bio_complete_raw, r, 0, 8192, 3);
	report("insert_after_missed_completion");

	/* the end-of-run sweep: four requests issued; then one's struct the
	 * kernel has freed (idle, no reference: its completion had no event),
	 * one is still in flight, half done (its sector moved on), one was
	 * requeued (idle, still referenced), one's struct holds another
	 * request in flight at another sector, and a flush (no data, sector 0)
	 * is in flight: two missed completions */
	{
		unsigned long long rq[4];
		static const unsigned long long at[4] = { 1600, 2400, 3200, 4000 };
		unsigned long long flush;

		fake->bss->state = 1;		/* MQ_RQ_IN_FLIGHT */
		fake->bss->ref = 1;
		for (unsigned int i = 0; i < 4; i++) {
			rq[i] = fake_request_at(i, 8192, 0, at[i]);
			run(bio->progs.bio_io_start_raw, rq[i], 0, 0, 1);
			run(bio->progs.bio_issue_raw, rq[i], 0, 0, 1);
		}
		flush = fake_request_at(4, 0, 2 /* REQ_OP_FLUSH */, 0);
		run(bio->progs.bio_io_start_raw, flush, 0, 0, 1);
		run(bio->progs.bio_issue_raw, flush, 0, 0, 1);
		run(bio->progs.bio_complete_raw, rq[1], 0, 4096, 3);
		fake_request_at(1, 4096, 0, at[1] + 8);
		fake_request_at(3, 8192, 0, 9000);
		fake->bss->state = 0;		/* MQ_RQ_IDLE */
		fake_request_at(2, 8192, 0, at[2]);
		fake->bss->ref = 0;
		fake_request_at(0, 8192, 0, at[0]);
	}
	if (lh_run_prog(bio->progs.bio_sweep)) {
		fprintf(stderr, "bio_synth: the sweep did not run: %s\n", strerror(errno));
		return 1;
	}
	report("sweep");

	fakerq_bpf__destroy(fake);
	bio_bpf__destroy(bio);
	return 0;
}
