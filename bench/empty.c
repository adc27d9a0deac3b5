// SPDX-License-Identifier: MIT
/* Attach bench/empty.bpf.c's sched or block programs, print "attached", wait for a signal.
 * "empty sched-clock": the sched programs each read the clock once a run. */
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
	struct empty_bpf *skel = empty_bpf__open();
	bool block = argc > 1 && !strcmp(argv[1], "block");

	if (!skel)
		return 1;
	skel->rodata->read_clock = argc > 1 && !strcmp(argv[1], "sched-clock");
	bpf_program__set_autoload(skel->progs.empty_wakeup, !block);
	bpf_program__set_autoload(skel->progs.empty_wakeup_new, !block);
	bpf_program__set_autoload(skel->progs.empty_switch, !block);
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
