// SPDX-License-Identifier: MIT
/* Attach bench/empty.bpf.c, print "attached", wait for SIGINT/SIGTERM. */
#include <signal.h>
#include <stdio.h>
#include <unistd.h>
#include "empty.skel.h"

static volatile sig_atomic_t done;

static void on_signal(int sig)
{
	(void)sig;
	done = 1;
}

int main(void)
{
	struct empty_bpf *skel = empty_bpf__open_and_load();

	if (!skel || empty_bpf__attach(skel)) {
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
