/* SPDX-License-Identifier: MIT */
/* The value of lathist_cgroup_paths (bpf/lathist.bpf.h), BPF and userspace. */
#ifndef LATHIST_CGROUP_PATH_H
#define LATHIST_CGROUP_PATH_H

/* A cgroup's path within the v2 hierarchy as cgroup_mkdir gives it ("/a/b"),
 * NUL-terminated, cut past LH_CGROUP_PATH_MAX - 1 bytes. */
#define LH_CGROUP_PATH_MAX 256

struct lh_cgroup_path {
	char path[LH_CGROUP_PATH_MAX];
};

#endif /* LATHIST_CGROUP_PATH_H */
