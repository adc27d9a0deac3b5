/* SPDX-License-Identifier: MIT */
/* What every test workload shares: the start handshake with the test. */
#ifndef LATHIST_WORKLOAD_H
#define LATHIST_WORKLOAD_H

#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

/* Say "ready PID" and wait for a line on stdin, so the tracer attaches first. */
static inline void wait_go(void)
{
	char buf[16];

	printf("ready %d\n", getpid());
	fflush(stdout);
	if (!fgets(buf, sizeof(buf), stdin))
		exit(1);
}

#endif /* LATHIST_WORKLOAD_H */
