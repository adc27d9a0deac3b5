/* SPDX-License-Identifier: MIT */
/* cgroup v2 ids (what BPF reports) to paths under the cgroup2 mount. */
#ifndef LATHIST_CGROUP_H
#define LATHIST_CGROUP_H

#include <stdbool.h>
#include <stdint.h>

/*
 * The path of cgroup id under the cgroup2 mount ("/" for the root), interned
 * (lh_cgroup_intern: one pointer per id, resolved once): what the start scan
 * saw, else the cgroup's folder now, else the path in the BPF map paths_fd
 * (lathist_cgroup_paths: cgroups made while tracing; -1 for none), else
 * "(gone)". NULL without memory.
 */
const char *lh_cgroup_name(uint64_t id, int paths_fd);

/* Does a cgroup v2 with this id exist now? */
bool lh_cgroup_alive(uint64_t id);

/* Intern every cgroup v2 there is now (a walk of the cgroup2 mount), so that
 * one removed later is still named. 0 or -errno (no cgroup2 mount: -ENOENT). */
int lh_cgroup_scan(void);

#endif /* LATHIST_CGROUP_H */
