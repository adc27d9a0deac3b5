// SPDX-License-Identifier: MIT
/* $LATHIST_TEST: hooks for tests and benches, out of the option surface. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "cli.h"
#include "util.h"

/*
 * Test and bench hooks, out of the option surface: $LATHIST_TEST, words
 * separated by spaces — reject=TYPE[,TYPE] (that attach type's load fails as
 * a verifier rejection would), no-sweep (the sweeps act as refused),
 * no-atomics (BPF atomics act as refused), no-batch (keyed maps read key by
 * key, as on a kernel without batch map operations), batch-count=N (N
 * elements per batch read, which grows where a hash bucket holds more),
 * consumer-delay-us=N (sleep per record read), kernel-wakeup (the kernel's
 * own ring buffer wakeups). An unknown word is a usage error.
 */
int lh_test_hooks(struct lh_common_opts *o, const char *tool)
{
	const char *env = getenv("LATHIST_TEST");
	char *list, *save = NULL, *w;
	int err = 0;

	if (!env || !*env)
		return 0;
	if (!(list = strdup(env)))
		return -ENOMEM;
	for (w = strtok_r(list, " ", &save); w && !err; w = strtok_r(NULL, " ", &save)) {
		if (!strcmp(w, "no-sweep")) {
			o->test_no_sweep = true;
		} else if (!strcmp(w, "no-atomics")) {
			o->test_no_atomics = true;
		} else if (!strcmp(w, "no-batch")) {
			o->test_no_batch = true;
		} else if (!strncmp(w, "batch-count=", 12)) {
			if (lh_parse_u32(w + 12, 1, 65536, &o->test_batch_count))
				err = -EINVAL;
		} else if (!strcmp(w, "kernel-wakeup")) {
			o->kernel_wakeup = true;
		} else if (!strncmp(w, "consumer-delay-us=", 18)) {
			if (lh_parse_u32(w + 18, 0, 1000000, &o->consumer_delay_us))
				err = -EINVAL;
		} else if (!strncmp(w, "reject=", 7)) {
			char *save2 = NULL;
			enum lh_attach_mode t;

			for (char *a = strtok_r(w + 7, ",", &save2); a && !err;
			     a = strtok_r(NULL, ",", &save2)) {
				if (lh_attach_parse(a, &t))
					err = -EINVAL;
				else
					o->test_reject |= 1U << t;
			}
		} else {
			err = -EINVAL;
		}
		if (err)
			lh_usage_error(tool, "LATHIST_TEST: '%s' is not a test hook; give reject=TYPES, "
				       "no-sweep, no-atomics, no-batch, batch-count=N, "
				       "consumer-delay-us=N or kernel-wakeup (or unset it)", w);
	}
	free(list);
	return err;
}
