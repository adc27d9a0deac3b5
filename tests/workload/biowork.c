// SPDX-License-Identifier: MIT
/*
 * Block I/O workload with known requests. Prints "ready PID", waits for a line
 * on stdin, runs, prints one JSON line with what it did, then "done".
 *
 *   biowork direct DEV NREADS RSIZE NWRITES WSIZE
 *       O_DIRECT, one request at a time (so none merge): NREADS reads of RSIZE
 *       bytes and NWRITES writes of WSIZE bytes, alternating, at offsets that
 *       restart at 0 (the same sectors on every device)
 *   biowork buffered DEV SIZE COUNT
 *       COUNT buffered writes of SIZE bytes, no fsync: the kernel flushes them later
 *   biowork reverse DEV BATCH ROUNDS
 *       ROUNDS x one io_submit of BATCH O_DIRECT 4 KiB writes at descending,
 *       touching offsets: under the submission's plug each bio ends where the
 *       previous request starts, so the block layer merges it in front
 *   biowork apart DEV BATCH ROUNDS
 *       the same at offsets 256 KiB apart: none merge, and under the plug all
 *       BATCH requests are made before any is issued (BATCH in flight at once)
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <linux/aio_abi.h>
#include <sys/syscall.h>
#include "workload.h"

static int run_direct(const char *dev, long nr, long rsize, long nw, long wsize)
{
	long max = rsize > wsize ? rsize : wsize, r = 0, w = 0;
	void *buf;
	int fd;

	if (posix_memalign(&buf, 4096, (size_t)max))
		return 1;
	memset(buf, 0x5a, (size_t)max);
	fd = open(dev, O_RDWR | O_DIRECT);
	if (fd < 0) {
		fprintf(stderr, "biowork: %s: %s\n", dev, strerror(errno));
		return 1;
	}
	wait_go();
	for (long i = 0; r < nr || w < nw; i++) {
		if ((i % 2 == 0 && r < nr) || w >= nw) {
			if (pread(fd, buf, (size_t)rsize, (off_t)(r * rsize)) != rsize)
				return 1;
			r++;
		} else {
			if (pwrite(fd, buf, (size_t)wsize, (off_t)(w * wsize)) != wsize)
				return 1;
			w++;
		}
	}
	close(fd);
	printf("{\"pid\":%d,\"reads\":%ld,\"read_bytes\":%ld,\"writes\":%ld,\"write_bytes\":%ld}\n",
	       getpid(), r, r * rsize, w, w * wsize);
	return 0;
}

static int run_buffered(const char *dev, long size, long count)
{
	char *buf = malloc((size_t)size);
	int fd;

	if (!buf)
		return 1;
	memset(buf, 0xa5, (size_t)size);
	fd = open(dev, O_WRONLY);
	if (fd < 0)
		return 1;
	wait_go();
	for (long i = 0; i < count; i++)
		if (write(fd, buf, (size_t)size) != size)
			return 1;
	close(fd);	/* no fsync: the data stays dirty in the page cache */
	printf("{\"pid\":%d,\"writes\":%ld,\"write_bytes\":%ld}\n", getpid(), count, count * size);
	return 0;
}

#define APART (256L << 10)

static int run_batches(const char *dev, long batch, long rounds, bool apart)
{
	struct iocb *cbs = calloc((size_t)batch, sizeof(*cbs)), **ptrs = calloc((size_t)batch, sizeof(*ptrs));
	struct io_event *evs = calloc((size_t)batch, sizeof(*evs));
	aio_context_t ctx = 0;
	void *buf;
	int fd;

	if (!cbs || !ptrs || !evs || posix_memalign(&buf, 4096, 4096))
		return 1;
	memset(buf, 0x3c, 4096);
	fd = open(dev, O_WRONLY | O_DIRECT);
	if (fd < 0 || syscall(SYS_io_setup, batch, &ctx)) {
		fprintf(stderr, "biowork: %s: %s\n", dev, strerror(errno));
		return 1;
	}
	wait_go();
	for (long r = 0; r < rounds; r++) {
		for (long i = 0; i < batch; i++) {
			memset(&cbs[i], 0, sizeof(cbs[i]));
			cbs[i].aio_fildes = (unsigned int)fd;
			cbs[i].aio_lio_opcode = IOCB_CMD_PWRITE;
			cbs[i].aio_buf = (unsigned long)buf;
			cbs[i].aio_nbytes = 4096;
			cbs[i].aio_offset = apart ? i * APART : (r * batch + batch - 1 - i) * 4096;
			ptrs[i] = &cbs[i];
		}
		if (syscall(SYS_io_submit, ctx, batch, ptrs) != batch)
			return 1;
		for (long done = 0; done < batch;) {
			long n = syscall(SYS_io_getevents, ctx, 1, batch - done, evs, NULL);

			if (n < 0 && errno != EINTR)
				return 1;
			for (long j = 0; j < n; j++)
				if (evs[j].res != 4096)
					return 1;
			done += n > 0 ? n : 0;
		}
	}
	syscall(SYS_io_destroy, ctx);
	close(fd);
	printf("{\"pid\":%d,\"writes\":%ld,\"write_bytes\":%ld}\n", getpid(), batch * rounds,
	       batch * rounds * 4096);
	return 0;
}

int main(int argc, char **argv)
{
	int rc = 2;

	if (argc == 7 && !strcmp(argv[1], "direct"))
		rc = run_direct(argv[2], atol(argv[3]), atol(argv[4]), atol(argv[5]), atol(argv[6]));
	else if (argc == 5 && !strcmp(argv[1], "buffered"))
		rc = run_buffered(argv[2], atol(argv[3]), atol(argv[4]));
	else if (argc == 5 && !strcmp(argv[1], "reverse"))
		rc = run_batches(argv[2], atol(argv[3]), atol(argv[4]), false);
	else if (argc == 5 && !strcmp(argv[1], "apart"))
		rc = run_batches(argv[2], atol(argv[3]), atol(argv[4]), true);
	else
		fprintf(stderr, "usage: biowork direct DEV NREADS RSIZE NWRITES WSIZE | "
			"buffered DEV SIZE COUNT | reverse|apart DEV BATCH ROUNDS\n");
	if (rc == 0)
		printf("done\n");
	fflush(stdout);
	return rc;
}
