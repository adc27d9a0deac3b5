/* SPDX-License-Identifier: MIT */
/*
 * lathist doctor's checks, for the tools' own (their descriptor's doctor): one
 * line per check with its status, what was found and, when not ok, what follows
 * and the fix.
 */
#ifndef LATHIST_DOCTOR_H
#define LATHIST_DOCTOR_H

#include <stdbool.h>
#include <bpf/libbpf.h>

struct lh_doctor;
struct lh_tool_desc;

enum lh_check_status { LH_CHECK_OK, LH_CHECK_INFO, LH_CHECK_MISSING, LH_CHECK_DENIED };

/* One check's line (text), or entry (-f json): its name, status and detail. */
__attribute__((format(printf, 4, 5)))
void lh_doctor_say(struct lh_doctor *d, const char *name, enum lh_check_status st,
		   const char *fmt, ...);

/* May this doctor load and probe (CAP_BPF)? Without, a probe's failure says
 * nothing about the kernel: say LH_CHECK_DENIED instead. */
bool lh_doctor_privileged(const struct lh_doctor *d);

/* Tool t cannot run here (a line before says why). */
void lh_doctor_cannot(struct lh_doctor *d, const struct lh_tool_desc *t);

/*
 * One BPF map type, probed (a test map) with the privilege to create it, said
 * as have or lack; absent: the status without it, LH_CHECK_MISSING making needs
 * unable to run (NULL: every tool). Returns 1 (there), 0 (absent), or a negative
 * errno (not known).
 */
int lh_doctor_map_type(struct lh_doctor *d, const char *name, enum bpf_map_type type,
		       enum lh_check_status absent, const struct lh_tool_desc *needs,
		       const char *have, const char *lack);

#endif /* LATHIST_DOCTOR_H */
