// SPDX-License-Identifier: MIT
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <json-c/json.h>
#include "anonymize.h"
#include "cli.h"

static int create_salt(struct lh_anon *a)
{
	int fd, err = 0;

	if (mkdir("/var/lib/lathist", 0700) && errno != EEXIST)
		return -errno;
	if (getrandom(a->salt, 32, 0) != 32)
		return -EIO;
	/* O_EXCL: two first runs at once must not each keep a different salt */
	fd = open(LH_ANON_SALT_FILE, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0)
		return -errno;
	if (write(fd, a->salt, 32) != 32 || fsync(fd))
		err = -EIO;
	close(fd);
	if (err)
		unlink(LH_ANON_SALT_FILE);
	a->salt_len = 32;
	return err;
}

int lh_anon_check_env(const char *tool)
{
	const char *env = getenv("LATHIST_ANON_SALT");
	size_t n = env ? strlen(env) : 0;

	/* one rule for both salts: a short one is guessed, and with it every id */
	if (!env || (n >= LH_ANON_SALT_MIN && n <= LH_ANON_SALT_MAX))
		return 0;
	lh_usage_error(tool, "--anonymize: LATHIST_ANON_SALT is %zu byte%s; give %d to %d "
		       "random bytes, e.g. $(openssl rand -hex 16), or unset it to use %s", n,
		       n == 1 ? "" : "s", LH_ANON_SALT_MIN, LH_ANON_SALT_MAX, LH_ANON_SALT_FILE);
	return -EINVAL;
}

int lh_anon_init(struct lh_anon *a, const char *tool)
{
	const char *env = getenv("LATHIST_ANON_SALT");
	ssize_t n;
	int fd, err;

	memset(a, 0, sizeof(*a));
	if (env) {
		if (lh_anon_check_env(tool))
			return -EINVAL;
		a->salt_len = (unsigned int)strlen(env);
		memcpy(a->salt, env, a->salt_len);
		return 0;
	}
	fd = open(LH_ANON_SALT_FILE, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0 && errno == ENOENT) {
		err = create_salt(a);
		if (err != -EEXIST)
			goto done;
		fd = open(LH_ANON_SALT_FILE, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
	}
	if (fd < 0) {
		err = -errno;
		goto done;
	}
	{
		unsigned char buf[sizeof(a->salt) + 1];
		struct stat st;

		/* a secret: a regular file (never a FIFO that would hang the read) that
		 * only its owner reads */
		if (fstat(fd, &st) || !S_ISREG(st.st_mode) || (st.st_mode & 077)) {
			err = fstat(fd, &st) ? -errno : !S_ISREG(st.st_mode) ? -EINVAL : -EACCES;
			close(fd);
			fprintf(stderr, "lathist %s: --anonymize: the salt %s %s; %s\n", tool,
				LH_ANON_SALT_FILE, err == -EACCES ? "can be read by others" :
				"is not a regular file", err == -EACCES ? "chmod 600 it, or remove it "
				"to make a new one" : "remove it to make a new one");
			return err;
		}

		n = read(fd, buf, sizeof(buf));
		err = n < 0 ? -errno : n < LH_ANON_SALT_MIN || n > LH_ANON_SALT_MAX ? -EINVAL : 0;
		if (!err) {
			memcpy(a->salt, buf, (size_t)n);
			a->salt_len = (unsigned int)n;
		}
	}
	close(fd);
done:
	if (err)
		fprintf(stderr, "lathist %s: --anonymize: cannot use the salt %s: %s; set "
			"LATHIST_ANON_SALT to a secret instead\n", tool, LH_ANON_SALT_FILE,
			err == -EINVAL ? "not 16 to 64 bytes" : strerror(-err));
	return err;
}

/* HMAC-SHA256 of what and data under the salt; all of data, however long (a
 * cgroup path): a message past the stack buffer is allocated, and without
 * memory its first bytes are taken. */
static void mac(const struct lh_anon *a, const char *what, const void *data, size_t len,
		unsigned char out[32])
{
	unsigned char small[96], *msg = small;
	unsigned int outlen = 32;
	size_t wl = strlen(what);

	if (wl + len > sizeof(small) && !(msg = malloc(wl + len))) {
		msg = small;
		len = sizeof(small) - wl;
	}
	memcpy(msg, what, wl);
	memcpy(msg + wl, data, len);
	HMAC(EVP_sha256(), a->salt, (int)a->salt_len, msg, wl + len, out, &outlen);
	if (msg != small)
		free(msg);
}

uint32_t lh_anon_id(const struct lh_anon *a, uint32_t id)
{
	unsigned char h[32];
	uint32_t v;

	if (!id)
		return 0;
	mac(a, "id:", &id, sizeof(id), h);
	memcpy(&v, h, sizeof(v));
	v &= 0x7fffffff;
	return v ? v : 1;
}

void lh_anon_comm(const struct lh_anon *a, char *comm, size_t len)
{
	unsigned char h[32];
	char out[16];

	if (!comm[0])
		return;
	mac(a, "comm:", comm, strnlen(comm, len), h);
	snprintf(out, sizeof(out), "task-%02x%02x%02x%02x%02x", h[0], h[1], h[2], h[3], h[4]);
	memset(comm, 0, len);
	memcpy(comm, out, strlen(out) < len ? strlen(out) : len - 1);
}

static void anon_key(const struct lh_anon *a, struct lh_key *k)
{
	/* a start time next to a pid is a fingerprint: hash the pair, so that reused
	 * ids stay apart without telling when the task started */
	if (k->fields & (LH_KEY_PID | LH_KEY_TID)) {
		uint32_t ids[2] = { k->pid, k->tid };
		unsigned char buf[16], h[32];

		memcpy(buf, ids, 8);
		memcpy(buf + 8, &k->birth_ns, 8);
		mac(a, "start:", buf, sizeof(buf), h);
		memcpy(&k->birth_ns, h, 8);
		k->birth_ns &= (1ULL << 53) - 1;	/* exact in JSON readers using doubles */
	}
	if (k->fields & LH_KEY_PID)
		k->pid = lh_anon_id(a, k->pid);
	if (k->fields & LH_KEY_TID)
		k->tid = lh_anon_id(a, k->tid);
	if (k->fields & LH_KEY_COMM)
		lh_anon_comm(a, k->comm, sizeof(k->comm));
	if (k->fields & LH_KEY_CGROUP) {
		unsigned char h[32];
		char path[20];
		uint64_t id;

		/* a path names services and containers: hashed with its id, so that a
		 * re-created cgroup stays a key of its own */
		mac(a, "cgroup:", &k->cgroup_id, sizeof(k->cgroup_id), h);
		memcpy(&id, h, sizeof(id));
		id &= (1ULL << 53) - 1;
		mac(a, "cgpath:", k->cgroup ? k->cgroup : "", k->cgroup ? strlen(k->cgroup) : 0, h);
		snprintf(path, sizeof(path), "cgroup-%02x%02x%02x%02x%02x", h[0], h[1], h[2], h[3],
			 h[4]);
		k->cgroup_id = id;
		k->cgroup = lh_cgroup_intern(id, path);	/* NULL (no memory): an empty label */
	}
}

void lh_anon_report(const struct lh_anon *a, struct lh_report *r)
{
	for (size_t i = 0; i < r->nhists; i++)
		anon_key(a, &r->hists[i].key);
	lh_report_index_reset(r);	/* the keys changed */
	for (size_t i = 0; i < r->npmu; i++)
		anon_key(a, &r->pmu[i].key);
	/* the losses charged to keys: as their histograms' keys, or the keys'
	 * bounds lose them and the real ids show */
	for (size_t i = 0; i < r->ncharges; i++) {
		struct lh_key_charge *c = &r->charges[i];
		struct lh_key k = { .fields = LH_KEY_PID | (c->tid ? LH_KEY_TID : 0), .pid = c->pid,
				    .tid = c->tid, .birth_ns = c->birth_ns };

		anon_key(a, &k);
		c->pid = k.pid;
		c->tid = k.tid;
		c->birth_ns = k.birth_ns;
	}
	lh_report_sort(r);
}

void lh_anon_host(const struct lh_anon *a, char *host, size_t len)
{
	unsigned char h[32];

	if (!host[0] || !strcmp(host, "mixed"))
		return;
	mac(a, "host:", host, strnlen(host, len), h);
	snprintf(host, len, "host-%02x%02x%02x%02x%02x", h[0], h[1], h[2], h[3], h[4]);
}

/* A boot id (a JSON string) as "boot-" and 10 hex digits, a new string. */
static json_object *anon_boot(const struct lh_anon *a, json_object *b)
{
	const char *v = json_object_get_string(b);
	unsigned char h[32];
	char out[32];

	mac(a, "boot:", v, strlen(v), h);
	snprintf(out, sizeof(out), "boot-%02x%02x%02x%02x%02x", h[0], h[1], h[2], h[3], h[4]);
	return json_object_new_string(out);
}

void lh_anon_meta(const struct lh_anon *a, struct lh_meta *m)
{
	for (int i = 0; i < m->nfilters; i++) {
		struct lh_filter *f = &m->filters[i];

		if (!strcmp(f->name, "pid") || !strcmp(f->name, "tid")) {
			snprintf(f->value, sizeof(f->value), "%u",
				 lh_anon_id(a, (uint32_t)strtoul(f->value, NULL, 10)));
		} else if (!strcmp(f->name, "cgroup")) {
			unsigned char h[32];

			mac(a, "cgpath:", f->value, strlen(f->value), h);
			snprintf(f->value, sizeof(f->value), "cgroup-%02x%02x%02x%02x%02x", h[0],
				 h[1], h[2], h[3], h[4]);
		}
	}
	lh_anon_host(a, m->host, sizeof(m->host));
	if (m->context) {	/* the boot id names the host as well as its name does */
		json_object *b, *mixed, *vals;

		if (json_object_object_get_ex(m->context, "boot_id", &b) &&
		    json_object_is_type(b, json_type_string) &&
		    strcmp(json_object_get_string(b), "mixed"))
			json_object_object_add(m->context, "boot_id", anon_boot(a, b));
		/* a merge: the values it lists */
		if (json_object_object_get_ex(m->context, "mixed", &mixed) &&
		    json_object_object_get_ex(mixed, "boot_id", &vals) &&
		    json_object_is_type(vals, json_type_array))
			for (size_t i = 0; i < json_object_array_length(vals); i++)
				if (json_object_is_type(json_object_array_get_idx(vals, i),
							json_type_string))
					json_object_array_put_idx(vals, i, anon_boot(a,
						json_object_array_get_idx(vals, i)));
	}
	m->anonymized = true;
}
