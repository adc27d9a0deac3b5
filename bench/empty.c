// SPDX-License-Identifier: MIT
/* Attach bench/empty.bpf.c's sched (default), sched-clock (the sched programs that
 * each read the clock once a run) or block programs, print "attached", wait for a
 * signal. Exit 2 for any other argument. */
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <stdbool.h>
#include <unistd.h>
#include "empty.skel.h"

static volatile sig_atomic_t done;

static void on_signal(int sig)
{
	(void)sig;
	done = 1;
}

int main(int argc, char **argv)
{
	const char *what = argc > 1 ? argv[1] : "sched";
	bool block = !strcmp(what, "block"), clock = !strcmp(what, "sched-clock");
	struct empty_bpf *skel;

	if (argc > 2 || (!block && !clock && strcmp(what, "sched"))) {
		fprintf(stderr, "empty: '%s': give sched, sched-clock or block\n", what);
		return 2;
	}
	skel = empty_bpf__open();
	if (!skel)
		return 1;
	bpf_program__set_autoload(skel->progs.empty_wakeup, !block && !clock);
	bpf_program__set_autoload(skel->progs.empty_wakeup_new, !block && !clock);
	bpf_program__set_autoload(skel->progs.empty_switch, !block && !clock);
	bpf_program__set_autoload(skel->progs.clock_wakeup, clock);
	bpf_program__set_autoload(skel->progs.clock_wakeup_new, clock);
	bpf_program__set_autoload(skel->progs.clock_switch, clock);
	bpf_program__set_autoload(skel->progs.empty_io_start, block);
	bpf_program__set_autoload(skel->progs.empty_rq_issue, block);
	bpf_program__set_autoload(skel->progs.empty_rq_complete, block);
	if (empty_bpf__load(skel) || empty_bpf__attach(skel)) {
		fprintf(stderr, "empty: cannot load or attach\n");
		return 1;
	}
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	fprintf(stderr, "attached\n");
	while (!done)
		pause();
	empty_bpf__destroy(skel);
	return 0;
}
