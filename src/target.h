/* SPDX-License-Identifier: MIT */
/* Which tasks a run traces: processes, cgroup v2 folders, the PID namespace. */
#ifndef LATHIST_TARGET_H
#define LATHIST_TARGET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Process (tgid) of a task id from /proc/ID/status, or -ESRCH. */
long lh_tgid_of(uint32_t id);

/* Where cgroup2 is mounted (first in /proc/self/mounts); -ENOENT when nowhere. */
int lh_cgroup2_mount(char *mnt, size_t len);

/* --per-cgroup needs a cgroup2 mount to name cgroups: 0, or -EINVAL after a
 * one-line usage error saying how to mount one. */
int lh_check_per_cgroup(const char *tool);

/*
 * Resolve a cgroup v2 path to its id (the folder's inode number, as
 * bpf_get_current_cgroup_id gives it): a folder's absolute path, a path relative
 * to the cgroup2 mount, or an absolute path that is no file, which is read under
 * the mount (the form of /proc/PID/cgroup: /system.slice; / is the root).
 * resolved: the folder's real path. Returns 0, -EMEDIUMTYPE (not cgroup2, or /
 * with no cgroup2 mount), -ENOTDIR or another -errno.
 */
int lh_cgroup_id(const char *path, char *resolved, size_t len, uint64_t *id);

/* Does this process run in the initial PID namespace, whose ids BPF reads?
 * (/proc/self/ns/pid of init_pid_ns is pid:[4026531836], PROC_PID_INIT_INO,
 * include/linux/proc_ns.h.) */
bool lh_in_init_pidns(void);

/* uses_ids: the first option given that takes or shows pids (NULL: none).
 * Outside the initial PID namespace those would be the host's, not the
 * caller's: a one-line usage error naming it, and -EINVAL. */
int lh_check_pidns(const char *tool, const char *uses_ids);

/* The tids /proc shows of the tasks pid_filter and tid_filter select (0: any), sorted,
 * into *out (malloc'd): how many, or -1 (no /proc, no memory). */
long lh_proc_tids(uint32_t pid_filter, uint32_t tid_filter, uint32_t **out);

/* Clock ticks since boot now (/proc/uptime), or 0. */
uint64_t lh_uptime_ticks(void);

/* Did task tid start at or after tick since (its /proc stat starttime), or is it
 * gone? Then it is not the task a scan before since saw under that tid. */
bool lh_task_started_since(uint32_t tid, uint64_t since);

#endif /* LATHIST_TARGET_H */
