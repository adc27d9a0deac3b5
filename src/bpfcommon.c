// SPDX-License-Identifier: MIT
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <linux/capability.h>
#include <linux/membarrier.h>
#include <sys/syscall.h>
#include <bpf/bpf.h>
#include <bpf/btf.h>
#include "bpfcommon.h"

#ifndef CAP_PERFMON
#define CAP_PERFMON 38
#endif
#ifndef CAP_BPF
#define CAP_BPF 39
#endif

static bool libbpf_verbose;

static int libbpf_print(enum libbpf_print_level level, const char *fmt, va_list args)
{
	if (!libbpf_verbose)
		return 0;
	(void)level;
	return vfprintf(stderr, fmt, args);
}

void lh_libbpf_setup(bool verbose)
{
	libbpf_verbose = verbose;
	libbpf_set_print(libbpf_print);
}

static bool has_cap(const struct __user_cap_data_struct *d, int cap)
{
	return d[cap / 32].effective & (1U << (cap % 32));
}

int lh_read_caps(struct lh_caps *caps)
{
	struct __user_cap_header_struct hdr = { _LINUX_CAPABILITY_VERSION_3, 0 };
	struct __user_cap_data_struct data[2] = {};

	if (syscall(SYS_capget, &hdr, data))
		return -errno;
	caps->admin = has_cap(data, CAP_SYS_ADMIN);
	caps->bpf = has_cap(data, CAP_BPF);
	caps->perfmon = has_cap(data, CAP_PERFMON);
	return 0;
}

int lh_caps_verdict(const struct lh_caps *c, char *msg, size_t len)
{
	if (c->admin || (c->bpf && c->perfmon))
		return 0;
	snprintf(msg, len,
		 "needs root, or CAP_BPF and CAP_PERFMON (missing:%s%s); run it with sudo",
		 c->bpf ? "" : " CAP_BPF", c->perfmon ? "" : " CAP_PERFMON");
	return -EPERM;
}

int lh_check_privileges(char *msg, size_t len)
{
	struct lh_caps c;
	int err = lh_read_caps(&c);

	if (err) {
		snprintf(msg, len, "cannot read capabilities: %s", strerror(-err));
		return -EPERM;
	}
	return lh_caps_verdict(&c, msg, len);
}

int lh_check_btf(char *msg, size_t len)
{
	if (access("/sys/kernel/btf/vmlinux", R_OK) == 0)
		return 0;
	snprintf(msg, len,
		 "this kernel has no BTF (/sys/kernel/btf/vmlinux missing): CO-RE needs a kernel "
		 "built with CONFIG_DEBUG_INFO_BTF=y");
	return -ENOENT;
}

int lh_check_bpf_ready(char *msg, size_t len)
{
	int err = lh_check_privileges(msg, len);

	return err ? err : lh_check_btf(msg, len);
}

/* vmlinux BTF, parsed once per process (several MB: not once per question) */
static struct btf *vmlinux_btf(void)
{
	static struct btf *btf;
	static bool tried;

	if (!tried) {
		tried = true;
		btf = btf__load_vmlinux_btf();
		if (libbpf_get_error(btf))
			btf = NULL;
	}
	return btf;
}

int lh_tp_nargs(const char *tp)
{
	struct btf *btf = vmlinux_btf();
	const struct btf_type *t;
	char name[128];
	int id, n = -ENOENT;

	if (!btf)
		return -ENOENT;
	snprintf(name, sizeof(name), "btf_trace_%s", tp);
	id = btf__find_by_name_kind(btf, name, BTF_KIND_TYPEDEF);
	if (id > 0) {
		t = btf__type_by_id(btf, id);			/* typedef */
		t = btf__type_by_id(btf, t->type);		/* pointer */
		if (t && btf_is_ptr(t))
			t = btf__type_by_id(btf, t->type);	/* func proto */
		if (t && btf_is_func_proto(t))
			n = btf_vlen(t) - 1;			/* minus void *__data */
	}
	return n;
}

int lh_run_iter(struct bpf_program *prog, int map_fd, char **out, size_t *len)
{
	union bpf_iter_link_info info = { .map.map_fd = (__u32)map_fd };
	LIBBPF_OPTS(bpf_iter_attach_opts, o, .link_info = &info, .link_info_len = sizeof(info));
	struct bpf_link *link = bpf_program__attach_iter(prog, map_fd >= 0 ? &o : NULL);
	char buf[4096];
	FILE *f = NULL;
	ssize_t n = 0;
	int fd, err = 0;

	if (!link)
		return -errno;
	if (out && !(f = open_memstream(out, len))) {
		bpf_link__destroy(link);
		return -ENOMEM;
	}
	fd = bpf_iter_create(bpf_link__fd(link));
	if (fd < 0) {
		err = -errno;
	} else {
		while ((n = read(fd, buf, sizeof(buf))) > 0)
			if (f && fwrite(buf, 1, (size_t)n, f) != (size_t)n)
				err = -ENOMEM;
		if (n < 0)
			err = -errno;
		close(fd);
	}
	if (f && fclose(f) && !err)
		err = -ENOMEM;
	bpf_link__destroy(link);
	return err;
}

int lh_run_prog(struct bpf_program *prog)
{
	LIBBPF_OPTS(bpf_test_run_opts, o);

	if (bpf_prog_test_run_opts(bpf_program__fd(prog), &o))
		return -errno;
	return 0;
}

bool lh_btf_has_member(const char *type, const char *member)
{
	struct btf *btf = vmlinux_btf();
	const struct btf_type *t;
	const struct btf_member *m;
	int id;

	if (!btf)
		return false;
	id = btf__find_by_name_kind(btf, type, BTF_KIND_STRUCT);
	t = id > 0 ? btf__type_by_id(btf, id) : NULL;
	if (!t)
		return false;
	m = btf_members(t);
	for (int i = 0; i < btf_vlen(t); i++, m++)
		if (!strcmp(btf__name_by_offset(btf, m->name_off), member))
			return true;
	return false;
}

int lh_probe_atomics(void)
{
	int map = bpf_map_create(BPF_MAP_TYPE_ARRAY, "lh_probe_atom", 4, 8, 1, NULL), fd, err;

	if (map < 0)
		return -errno;
	{
		struct bpf_insn insns[] = {
			/* r1 = the map; *(u32 *)(r10 - 4) = 0; r0 = lookup(r1, r10 - 4) */
			{ .code = BPF_LD | BPF_DW | BPF_IMM, .dst_reg = BPF_REG_1,
			  .src_reg = BPF_PSEUDO_MAP_FD, .imm = map },
			{ 0 },
			{ .code = BPF_ST | BPF_MEM | BPF_W, .dst_reg = BPF_REG_10, .off = -4 },
			{ .code = BPF_ALU64 | BPF_MOV | BPF_X, .dst_reg = BPF_REG_2,
			  .src_reg = BPF_REG_10 },
			{ .code = BPF_ALU64 | BPF_ADD | BPF_K, .dst_reg = BPF_REG_2, .imm = -4 },
			{ .code = BPF_JMP | BPF_CALL, .imm = BPF_FUNC_map_lookup_elem },
			{ .code = BPF_JMP | BPF_JEQ | BPF_K, .dst_reg = BPF_REG_0, .off = 4 },
			/* r0 = cmpxchg_64(r6 + 0, r0 = 0, r1 = 1) */
			{ .code = BPF_ALU64 | BPF_MOV | BPF_X, .dst_reg = BPF_REG_6,
			  .src_reg = BPF_REG_0 },
			{ .code = BPF_ALU64 | BPF_MOV | BPF_K, .dst_reg = BPF_REG_0, .imm = 0 },
			{ .code = BPF_ALU64 | BPF_MOV | BPF_K, .dst_reg = BPF_REG_1, .imm = 1 },
			{ .code = BPF_STX | BPF_DW | BPF_ATOMIC, .dst_reg = BPF_REG_6,
			  .src_reg = BPF_REG_1, .imm = BPF_CMPXCHG },
			{ .code = BPF_ALU64 | BPF_MOV | BPF_K, .dst_reg = BPF_REG_0, .imm = 0 },
			{ .code = BPF_JMP | BPF_EXIT },
		};

		fd = bpf_prog_load(BPF_PROG_TYPE_SOCKET_FILTER, "lh_probe_atom", "GPL", insns,
				   sizeof(insns) / sizeof(insns[0]), NULL);
		err = fd < 0 ? -errno : 0;
	}
	if (fd >= 0)
		close(fd);
	close(map);
	return err;
}

int lh_probe_iter(const char *target)
{
	struct bpf_insn insns[] = {
		{ .code = BPF_ALU64 | BPF_MOV | BPF_K, .dst_reg = BPF_REG_0, .imm = 0 },
		{ .code = BPF_JMP | BPF_EXIT },
	};
	LIBBPF_OPTS(bpf_prog_load_opts, opts, .expected_attach_type = BPF_TRACE_ITER);
	char name[64];
	struct btf *vmlinux = btf__load_vmlinux_btf();
	int id, fd;

	if (!vmlinux)
		return -ESRCH;
	snprintf(name, sizeof(name), "bpf_iter_%s", target);
	id = btf__find_by_name_kind(vmlinux, name, BTF_KIND_FUNC);
	btf__free(vmlinux);
	if (id < 0)
		return -ENOENT;
	opts.attach_btf_id = (__u32)id;
	fd = bpf_prog_load(BPF_PROG_TYPE_TRACING, "lh_probe_iter", "GPL", insns,
			   sizeof(insns) / sizeof(insns[0]), &opts);
	if (fd < 0)
		return -errno;
	close(fd);
	return 0;
}

bool lh_probe_tp_btf_task_storage(void)
{
	if (access("/sys/kernel/btf/vmlinux", R_OK))
		return false;
	/* task storage (5.11) came after tp_btf (5.5) */
	return libbpf_probe_bpf_map_type(BPF_MAP_TYPE_TASK_STORAGE, NULL) == 1;
}

void lh_wait_for_bpf_readers(void)
{
	if (syscall(__NR_membarrier, MEMBARRIER_CMD_GLOBAL, 0, 0) == 0)
		return;
	usleep(20000);
}

uint64_t lh_map_memlock(int map_fd)
{
	char path[64], line[256];
	unsigned long long v = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/self/fdinfo/%d", map_fd);
	f = fopen(path, "r");
	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "memlock: %llu", &v) == 1)
			break;
	fclose(f);
	return v;
}

bool lh_map_type_percpu(enum bpf_map_type t)
{
	return t == BPF_MAP_TYPE_PERCPU_HASH || t == BPF_MAP_TYPE_PERCPU_ARRAY ||
	       t == BPF_MAP_TYPE_LRU_PERCPU_HASH;
}

bool lh_prealloc_if_small(struct bpf_map *map, uint32_t entries, size_t value_size)
{
	int ncpus = lh_map_type_percpu(bpf_map__type(map)) ? libbpf_num_possible_cpus() : 1;
	uint64_t bytes = (uint64_t)entries * lh_percpu_stride(value_size) * (uint64_t)(ncpus > 0 ? ncpus : 1);

	if (bytes > LH_PREALLOC_MAX)
		return false;
	bpf_map__set_map_flags(map, bpf_map__map_flags(map) & ~BPF_F_NO_PREALLOC);
	return true;
}
