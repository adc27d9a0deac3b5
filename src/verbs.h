/* SPDX-License-Identifier: MIT */
/* The verbs that are not tracing tools (those are in the registry): their mains,
 * argv[0] being the verb, returning an exit status (cli.h: LH_EXIT_*). */
#ifndef LATHIST_VERBS_H
#define LATHIST_VERBS_H

#include <stddef.h>

/* lathist report (src/report/report_cmd.c): read, merge and print saved runs. */
int report_main(int argc, char **argv);

/* report's reader alone, for the fuzz target: parse and merge every document in
 * buf (len bytes), render each format to /dev/null; 0 or a negative errno (bad
 * input said on stderr). */
int lh_report_parse_buffer(const char *buf, size_t len);

/* lathist doctor (src/doctor.c): what can run here, read-only. */
int doctor_main(int argc, char **argv);

/* lathist serve (src/serve.c): the tools served to Prometheus. */
int serve_main(int argc, char **argv);

#endif /* LATHIST_VERBS_H */
