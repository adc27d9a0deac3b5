/* SPDX-License-Identifier: MIT */
/*
 * --anonymize: task names and ids replaced by stable salted hashes
 * (HMAC-SHA256, OpenSSL), so a report can leave the team without naming its
 * processes. The same salt gives the same hash on every run and host: the salt
 * is $LATHIST_ANON_SALT when set (share it to compare hosts), else a random
 * 32-byte secret kept in /var/lib/lathist/anon-salt (created 0600 on first
 * use). A key's start time (start_ns) becomes a hash of (pid, tid, start_ns):
 * reused ids stay apart without telling when a task started.
 */
#ifndef LATHIST_ANONYMIZE_H
#define LATHIST_ANONYMIZE_H

#include <stdint.h>
#include "report.h"

#define LH_ANON_SALT_FILE "/var/lib/lathist/anon-salt"
#define LH_ANON_SALT_MIN 16	/* bytes of salt, from $LATHIST_ANON_SALT or the file */
#define LH_ANON_SALT_MAX 64

struct lh_anon {
	unsigned char salt[LH_ANON_SALT_MAX];
	unsigned int salt_len;
};

/* $LATHIST_ANON_SALT, when set, must be 16 to 64 bytes: else a one-line usage
 * error naming tool and -EINVAL (checked with the options, before tracing). */
int lh_anon_check_env(const char *tool);

/* Load (or create) the salt: 16 to 64 bytes, from $LATHIST_ANON_SALT or the salt
 * file. Negative errno with a one-line message naming tool. */
int lh_anon_init(struct lh_anon *a, const char *tool);

/* A pid or tid as a stable hash in 1..2^31-1 (0 stays 0: idle, or none). */
uint32_t lh_anon_id(const struct lh_anon *a, uint32_t id);

/* A task name (up to len bytes, NUL-padded) as "task-" and 10 hex digits, in place. */
void lh_anon_comm(const struct lh_anon *a, char *comm, size_t len);

/* Every pid, tid and task name of r's histogram keys and counter rows; sorts r again. */
void lh_anon_report(const struct lh_anon *a, struct lh_report *r);

/* A host name as "host-" and 10 hex digits, in place ("mixed" stays). */
void lh_anon_host(const struct lh_anon *a, char *host, size_t len);

/* The -p/-t filter values and the host of m, which then says it is anonymized
 * (once per run: they stay across intervals). */
void lh_anon_meta(const struct lh_anon *a, struct lh_meta *m);

#endif /* LATHIST_ANONYMIZE_H */
