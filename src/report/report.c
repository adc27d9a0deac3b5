// SPDX-License-Identifier: MIT
#include <errno.h>
#include <pthread.h>
#include <stddef.h>
#include <inttypes.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <json-c/json.h>
#include "pmu_user.h"
#include "recline.h"
#include "registry.h"
#include "report.h"

/* The task a key names: its ids, then its start time (0s in a CPU's key). */
static int task_cmp(const struct lh_key *a, const struct lh_key *b)
{
	if (a->pid != b->pid)
		return a->pid < b->pid ? -1 : 1;
	if (a->tid != b->tid)
		return a->tid < b->tid ? -1 : 1;
	if (a->birth_ns != b->birth_ns)
		return a->birth_ns < b->birth_ns ? -1 : 1;
	return 0;
}

const char *const lh_op_names[LH_NR_OPS] = { "read", "write", "flush", "discard", "other" };

int lh_op_index(const char *op)
{
	for (int i = 0; i < LH_NR_OPS; i++)
		if (!strcmp(lh_op_names[i], op))
			return i;
	return -1;
}

/* The place of an operation name in lh_op_names (LH_NR_OPS: not there). */
static int op_rank(const char *op)
{
	int i = lh_op_index(op);

	return i < 0 ? LH_NR_OPS : i;
}

static int key_cmp(const struct lh_key *a, const struct lh_key *b)
{
	int c;

	if (a->fields != b->fields)
		return a->fields < b->fields ? -1 : 1;
	if ((c = task_cmp(a, b)))
		return c;
	if (a->cpu != b->cpu)
		return a->cpu < b->cpu ? -1 : 1;
	if (a->cgroup_id != b->cgroup_id)
		return a->cgroup_id < b->cgroup_id ? -1 : 1;
	if ((c = strcmp(a->disk, b->disk)))
		return c;
	if ((a->fields & LH_KEY_OP) && (c = op_rank(a->op) - op_rank(b->op)))
		return c;
	if ((c = strcmp(a->op, b->op)))
		return c;
	return strcmp(a->comm, b->comm);
}

struct lh_hist *lh_report_add_hist(struct lh_report *r, const char *name, const struct lh_key *key)
{
	struct lh_hist *h;

	if (r->nhists == r->cap) {
		size_t cap = r->cap ? 2 * r->cap : 16;
		struct lh_hist *n = realloc(r->hists, cap * sizeof(*n));

		if (!n)
			return NULL;
		r->hists = n;
		r->cap = cap;
	}
	h = &r->hists[r->nhists];
	/* an interval adds thousands: ask for the memory of the ones two ahead now (the
	 * last interval's, out of the cache again), the histogram and its spare slots */
	if (r->nhists + 2 < r->cap)
		__builtin_prefetch(&r->hists[r->nhists + 2], 1);
	if (r->nspare > 2)
		lh_slots_prefetch(r->spare[r->nspare - 3], r->spare_nslots, true);
	if (r->nspare && r->spare_nslots == lh_nslots(&r->meta.scheme))
		lh_hist_init_with(h, name, key, &r->meta.scheme, r->spare[--r->nspare]);
	else if (lh_hist_init(h, name, key, &r->meta.scheme))
		return NULL;
	r->nhists++;
	return h;
}

/* The place of kind name among m's kinds (m->nkinds for one not there). */
static int name_rank(const struct lh_meta *m, const char *name)
{
	int i;

	for (i = 0; i < m->nkinds; i++)
		if (!strcmp(m->kinds[i].name, name))
			return i;
	return i;
}

static int pmu_cmp(const void *pa, const void *pb)
{
	const struct lh_pmu_row *a = pa, *b = pb;
	int c = key_cmp(&a->key, &b->key);

	return c ? c : a->event - b->event;
}

static void charges_settle(struct lh_report *r);

/* A task's key is its ids and start time: its name (comm) is not part of it,
 * so a task that renamed itself or exec()ed stays one key. */
static bool task_key(const struct lh_key *k)
{
	return k->fields & (LH_KEY_PID | LH_KEY_TID);
}

/* One name per task: the one seen first (least name_ns) among its histograms,
 * given to them all and to its counter rows (whose own name is a fallback). */
struct named {
	struct lh_key *key;	/* the best name of the task so far; NULL: a free slot */
	uint64_t at;		/* its name_ns; UINT64_MAX for a counter row */
};

/* A slot for task key k in a table of cap (a power of two) slots: its own, or a free one. */
static struct named *named_slot(struct named *t, size_t cap, const struct lh_key *k)
{
	uint64_t h = ((uint64_t)k->pid << 32 | k->tid) * 0x9e3779b97f4a7c15ULL ^
		     k->birth_ns * 0xc2b2ae3d27d4eb4fULL;
	size_t j = (size_t)(h ^ h >> 29) & (cap - 1);

	while (t[j].key && task_cmp(t[j].key, k))
		j = (j + 1) & (cap - 1);
	return &t[j];
}

/* Is a name (at) better than the task's best so far? A name beats none, then the earlier. */
static bool better_name(const struct named *best, const struct lh_key *k, uint64_t at)
{
	if (!best->key->comm[0] != !k->comm[0])
		return k->comm[0];
	return at < best->at;
}

/* Two passes over the task keys through a hash of the tasks (open addressing,
 * at most half full): the best name of each, then given to all of its keys. */
static void unify_names(struct lh_report *r)
{
	size_t n = r->nhists + r->npmu, cap = 16;
	struct named *t;

	while (cap < 2 * n)
		cap *= 2;
	if (!(t = calloc(cap, sizeof(*t))))
		return;		/* names left as they are: memory is short */
	for (int pass = 0; pass < 2; pass++)
		for (size_t i = 0; i < n; i++) {
			bool hist = i < r->nhists;
			struct lh_key *k = hist ? &r->hists[i].key : &r->pmu[i - r->nhists].key;
			uint64_t at = hist ? r->hists[i].name_ns : UINT64_MAX;
			struct named *s;

			if (!task_key(k) || !(k->fields & LH_KEY_COMM))
				continue;
			s = named_slot(t, cap, k);
			if (pass == 1)
				memcpy(k->comm, s->key->comm, sizeof(k->comm));
			else if (!s->key || better_name(s, k, at))
				*s = (struct named){ k, at };
		}
	free(t);
}

/*
 * A histogram's place in the sort, as two words that order like key_cmp on
 * what they hold: a = its name's rank << 40 | key fields << 32 | pid, b = tid
 * << 32 | its index. Most pairs differ there, and compare as integers.
 */
struct sort_ent {
	uint64_t a, b;
};

_Static_assert(LH_KEY_OTHER < 256, "key fields fit in 8 bits of sort_ent.a");

/* Does x come before y: by rank, key (cgroup keys by id), then index. */
static bool ent_before(const struct sort_ent *x, const struct sort_ent *y,
		       const struct lh_hist *h)
{
	int c;

	if (x->a != y->a)
		return x->a < y->a;
	if (x->b >> 32 != y->b >> 32)
		return x->b < y->b;
	/* rank, fields, pid and tid the same: the rest of the key */
	if ((c = key_cmp(&h[(uint32_t)x->b].key, &h[(uint32_t)y->b].key)))
		return c < 0;
	return (uint32_t)x->b < (uint32_t)y->b;
}

/* ent_before as qsort_r's comparison (arg: the histograms). */
static int ent_cmp(const void *x, const void *y, void *arg)
{
	const struct sort_ent *a = x, *b = y;

	if ((uint32_t)a->b == (uint32_t)b->b)	/* itself: two histograms' indexes differ */
		return 0;
	return ent_before(a, b, arg) ? -1 : 1;
}

/* Runs of equal words up to this long are put in order by an insertion sort,
 * longer ones by qsort_r: a run is one kind's whole set of cgroup, disk or cpu
 * keys (pid and tid 0), and thousands of cgroups made the insertion sort
 * quadratic. */
#define SHORT_RUN 16

/*
 * Sort v (n entries, in index order) with ent_before, through tmp (n entries);
 * returns where the sorted entries are, v or tmp. A radix sort (least
 * significant byte first, stable) on the words' 96 bits of rank, fields, pid
 * and tid, which skips a byte where every entry has the same one: a few
 * passes without a branch to mispredict, where a comparison sort of 13,000
 * histograms an interval took 7% of the loader's time. Entries whose words
 * are the same (a cpu's, a disk's, a cgroup's keys: pid and tid 0) are then
 * put in order by the rest of their keys, each run with an insertion sort
 * (SHORT_RUN or shorter) or qsort_r.
 */
static struct sort_ent *sort_ents(struct sort_ent *v, struct sort_ent *tmp, size_t n,
				  const struct lh_hist *h)
{
	size_t at[256];

	for (int byte = 0; byte < 12 && n > 1; byte++) {
		/* bytes 0..3: the tid (the high half of b); 4..11: a */
		unsigned int shift = byte < 4 ? 32 + 8 * (unsigned int)byte :
				     8 * (unsigned int)(byte - 4);
		size_t off = byte < 4 ? offsetof(struct sort_ent, b) : offsetof(struct sort_ent, a);
		size_t sum = 0;
		struct sort_ent *t;

#define DIGIT(e) ((*(const uint64_t *)((const char *)(e) + off) >> shift) & 0xff)
		memset(at, 0, sizeof(at));
		for (size_t i = 0; i < n; i++)
			at[DIGIT(&v[i])]++;
		if (at[DIGIT(&v[0])] == n)	/* every entry has this byte */
			continue;
		for (int d = 0; d < 256; d++) {
			size_t c = at[d];

			at[d] = sum;
			sum += c;
		}
		for (size_t i = 0; i < n; i++)
			tmp[at[DIGIT(&v[i])]++] = v[i];
#undef DIGIT
		t = v;
		v = tmp;
		tmp = t;
	}
	for (size_t i = 0, j; i < n; i = j) {
		for (j = i + 1; j < n && v[j].a == v[i].a && v[j].b >> 32 == v[i].b >> 32; j++)
			;
		if (j - i > SHORT_RUN) {	/* many keys without a pid (cgroups, disks) */
			qsort_r(v + i, j - i, sizeof(*v), ent_cmp, (void *)h);
			continue;
		}
		for (size_t k = i + 1; k < j; k++) {	/* the run [i, j): by the rest of the key */
			struct sort_ent e = v[k];
			size_t m = k;

			for (; m > i && ent_before(&e, &v[m - 1], h); m--)
				v[m] = v[m - 1];
			v[m] = e;
		}
	}
	return v;
}

/*
 * r's histograms by kind (in meta.kinds order, unknown names last), then
 * key. Sorted as sort_ent words (sort_ents) and then moved into place, one
 * cycle of the permutation at a time: a qsort of the histograms themselves
 * moved ~200 bytes a step with memcpy and ranked both names at each
 * comparison of two kinds. -ENOMEM (r unchanged) without memory for the words.
 */
static int sort_hists(struct lh_report *r)
{
	struct sort_ent *mem = malloc(2 * r->nhists * sizeof(*mem)), *v = mem;
	uint64_t rank = 0;

	if (!mem || r->nhists > UINT32_MAX) {
		free(mem);
		return -ENOMEM;
	}
	for (size_t i = 0; i < r->nhists; i++) {
		const struct lh_key *k = &r->hists[i].key;

		/* a kind's histograms mostly come together: rank each run once (the
		 * kinds are a tool's few, far under 2^24) */
		if (!i || strcmp(r->hists[i].name, r->hists[i - 1].name))
			rank = (uint64_t)name_rank(&r->meta, r->hists[i].name);
		v[i].a = rank << 40 | (uint64_t)k->fields << 32 | k->pid;
		v[i].b = (uint64_t)k->tid << 32 | i;
	}
	v = sort_ents(v, mem + r->nhists, r->nhists, r->hists);
	/* place i takes histogram (uint32_t)v[i].b; a place filled is marked v[i].b = i */
	for (size_t i = 0; i < r->nhists; i++) {
		struct lh_hist first;
		size_t at = i;

		if ((uint32_t)v[i].b == i)
			continue;
		first = r->hists[i];
		for (;;) {
			size_t from = (uint32_t)v[at].b;

			v[at].b = at;
			if (from == i) {
				r->hists[at] = first;
				break;
			}
			r->hists[at] = r->hists[from];
			at = from;
		}
	}
	free(mem);
	return 0;
}

void lh_report_sort(struct lh_report *r)
{
	unify_names(r);
	if (r->nhists)
		(void)sort_hists(r);	/* -ENOMEM: the order left as it is */
	lh_report_index_reset(r);
	if (r->npmu)
		qsort(r->pmu, r->npmu, sizeof(*r->pmu), pmu_cmp);
	charges_settle(r);
}

struct lh_pmu_row *lh_report_add_pmu(struct lh_report *r, const struct lh_key *key, int event)
{
	struct lh_pmu_row *row;

	if (r->npmu == r->pmu_cap) {
		size_t cap = r->pmu_cap ? 2 * r->pmu_cap : 16;
		struct lh_pmu_row *p = realloc(r->pmu, cap * sizeof(*p));

		if (!p)
			return NULL;
		r->pmu = p;
		r->pmu_cap = cap;
	}
	row = &r->pmu[r->npmu++];
	memset(row, 0, sizeof(*row));
	row->key = *key;
	row->event = event;
	return row;
}

void lh_report_reset(struct lh_report *r)
{
	uint32_t nslots = lh_nslots(&r->meta.scheme);
	size_t keep = r->nspare + r->nhists;

	if (keep > r->spare_cap) {
		uint64_t **sp = realloc(r->spare, keep * sizeof(*sp));

		if (sp) {
			r->spare = sp;
			r->spare_cap = keep;
		}
	}
	if (r->nspare && r->spare_nslots != nslots) {	/* another scheme's: not reused */
		for (size_t i = 0; i < r->nspare; i++)
			free(r->spare[i]);
		r->nspare = 0;
	}
	r->spare_nslots = nslots;
	for (size_t i = 0; i < r->nhists; i++) {
		if (r->nspare < r->spare_cap && r->hists[i].nslots == nslots)
			r->spare[r->nspare++] = r->hists[i].slots;
		else
			lh_hist_free(&r->hists[i]);
	}
	r->nhists = 0;
	r->npmu = 0;
	lh_report_index_reset(r);
	memset(r->counters, 0, sizeof(r->counters));
	if (r->gap_cpu)
		memset(r->gap_cpu, 0, r->gap_ncpus * sizeof(*r->gap_cpu));
	r->ncharges = 0;
	r->charged = 0;
}

void lh_report_clear(struct lh_report *r)
{
	for (size_t i = 0; i < r->nspare; i++)
		free(r->spare[i]);
	free(r->spare);
	r->spare = NULL;
	r->nspare = r->spare_cap = 0;
	free(r->pmu);
	r->pmu = NULL;
	r->npmu = r->pmu_cap = 0;
	for (size_t i = 0; i < r->nhists; i++)
		lh_hist_free(&r->hists[i]);
	free(r->hists);
	r->hists = NULL;
	r->nhists = r->cap = 0;
	free(r->index);
	r->index = NULL;
	r->index_cap = r->index_n = 0;
	memset(r->counters, 0, sizeof(r->counters));
	free(r->gap_cpu);
	r->gap_cpu = NULL;
	r->gap_ncpus = 0;
	free(r->charges);
	r->charges = NULL;
	r->ncharges = r->charges_cap = 0;
	r->charged = 0;
}

int lh_report_gaps(struct lh_report *r, uint32_t n)
{
	uint64_t *g;

	if (n <= r->gap_ncpus)
		return 0;
	if (n > LH_MAX_GAP_CPUS)
		return -E2BIG;
	g = realloc(r->gap_cpu, n * sizeof(*g));
	if (!g)
		return -ENOMEM;
	memset(g + r->gap_ncpus, 0, (n - r->gap_ncpus) * sizeof(*g));
	r->gap_cpu = g;
	r->gap_ncpus = n;
	return 0;
}

static int charge_cmp(const void *a, const void *b)
{
	const struct lh_key_charge *x = a, *y = b;

	if (x->pid != y->pid)
		return x->pid < y->pid ? -1 : 1;
	if (x->tid != y->tid)
		return x->tid < y->tid ? -1 : 1;
	return x->birth_ns < y->birth_ns ? -1 : x->birth_ns > y->birth_ns;
}

bool lh_charges_sort_unique(struct lh_key_charge *v, size_t n, struct lh_key_charge *twice)
{
	if (n < 2)
		return true;
	qsort(v, n, sizeof(*v), charge_cmp);
	for (size_t i = 1; i < n; i++)
		if (!charge_cmp(&v[i - 1], &v[i])) {
			*twice = v[i];
			return false;
		}
	return true;
}

int lh_report_charge(struct lh_report *r, const struct lh_key_charge *c)
{
	if (r->ncharges == r->charges_cap) {
		size_t cap = r->charges_cap ? 2 * r->charges_cap : 64;
		struct lh_key_charge *v = realloc(r->charges, cap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		r->charges = v;
		r->charges_cap = cap;
	}
	r->charges[r->ncharges++] = *c;
	r->charged = lh_add_sat(r->charged, c->lost);
	return 0;
}

/* Sort the charges by key and add up those of one key. */
static void charges_settle(struct lh_report *r)
{
	size_t n = 0;

	if (r->ncharges < 2)
		return;
	qsort(r->charges, r->ncharges, sizeof(*r->charges), charge_cmp);
	for (size_t i = 1; i < r->ncharges; i++) {
		if (!charge_cmp(&r->charges[n], &r->charges[i]))
			r->charges[n].lost = lh_add_sat(r->charges[n].lost, r->charges[i].lost);
		else
			r->charges[++n] = r->charges[i];
	}
	r->ncharges = n + 1;
}

const char *lh_meta_counter_desc(const struct lh_meta *m, int i)
{
	return m->desc && m->desc->counter_desc && i >= 0 && i < LH_NR_COUNTERS ?
	       m->desc->counter_desc[i] : NULL;
}

bool lh_meta_counts(const struct lh_meta *m, int i)
{
	return lh_meta_counter_desc(m, i) && !(lh_counter_info(i)->needs & ~m->features);
}

uint64_t lh_report_key_charge(const struct lh_report *r, const struct lh_key *key)
{
	struct lh_key_charge k = { .pid = key->pid, .tid = key->fields & LH_KEY_TID ? key->tid : 0,
				   .birth_ns = key->birth_ns };
	const struct lh_key_charge *c;

	if (!r->ncharges || !(key->fields & LH_KEY_PID))
		return 0;
	c = bsearch(&k, r->charges, r->ncharges, sizeof(k), charge_cmp);
	return c ? c->lost : 0;
}


const char *lh_slot_range(char *buf, size_t len, int s, const struct lh_meta *m)
{
	uint64_t lo = lh_slot_lo((uint32_t)s, m->scheme.precision);
	uint64_t hi = lh_slot_hi((uint32_t)s, m->scheme.precision);
	char t[48], *p = t;	/* "(lo, hi]": at most 2 x 20 digits and 4 */
	size_t n;

	/* "(%" PRIu64 ", inf)" or "%c%" PRIu64 ", %" PRIu64 "]", by hand: the text output
	 * prints four per histogram */
	*p++ = hi != UINT64_MAX && !s ? '[' : '(';
	p = lh_put_u64(p, lo);
	*p++ = ',';
	*p++ = ' ';
	if (hi == UINT64_MAX) {
		memcpy(p, "inf)", 4);
		p += 4;
	} else {
		p = lh_put_u64(p, hi);
		*p++ = ']';
	}
	n = (size_t)(p - t);
	if (len) {		/* as snprintf: what fits, and a NUL */
		n = n < len - 1 ? n : len - 1;
		memcpy(buf, t, n);
		buf[n] = 0;
	}
	return buf;
}

const char *lh_bounds_range(char *buf, size_t len, int low, int high, const struct lh_meta *m)
{
	char a[64], b[64];

	lh_slot_range(a, sizeof(a), low, m);
	if (lh_slot_hi((uint32_t)high, m->scheme.precision) == UINT64_MAX)
		snprintf(buf, len, "%s .. unbounded", a);	/* nothing bounds it */
	else
		snprintf(buf, len, "%s .. %s", a, lh_slot_range(b, sizeof(b), high, m));
	return buf;
}

uint64_t lh_report_hist_lost(const struct lh_report *r, const struct lh_hist *h)
{
	unsigned int scope = LH_SCOPE_EVENTS;
	uint64_t lost;

	for (int i = 0; i < r->meta.nkinds; i++)
		if (!strcmp(r->meta.kinds[i].name, h->name))
			scope = r->meta.kinds[i].scope;
	lost = lh_scope_lost(r->counters, scope);
	if (!(scope & LH_SCOPE_EVENTS))
		return lost;
	/* another key's losses cannot be this key's waits */
	lost -= r->charged < lost ? r->charged : lost;
	return lh_add_sat(lost, lh_report_key_charge(r, &h->key));
}

uint64_t lh_report_percentiles(const struct lh_report *r, const struct lh_hist *h,
			       struct lh_pct out[LH_NR_PERCENTILES])
{
	uint64_t lost = lh_report_hist_lost(r, h);
	int slot[LH_NR_PERCENTILES], low[LH_NR_PERCENTILES], high[LH_NR_PERCENTILES];

	/* empty: every slot and bound -1; nothing lost: both bounds are the slot */
	if (lh_hist_quantile_slots(h, lh_percentiles, LH_NR_PERCENTILES, lost, slot,
				   lost ? low : NULL, lost ? high : NULL)) {
		for (size_t i = 0; i < LH_NR_PERCENTILES; i++)
			out[i].slot = out[i].low = out[i].high = -1;
		return lost;
	}
	for (size_t i = 0; i < LH_NR_PERCENTILES; i++) {
		out[i].slot = slot[i];
		out[i].low = lost ? low[i] : slot[i];
		out[i].high = lost ? high[i] : slot[i];
	}
	return lost;
}

void lh_printable(const char *in, size_t inlen, char *out, size_t outlen)
{
	size_t o = 0;

	for (size_t i = 0; i < inlen && in[i] && o + 5 <= outlen; i++) {
		unsigned char c = (unsigned char)in[i];

		if (c == '\\')
			o += (size_t)snprintf(out + o, outlen - o, "\\\\");
		else if (c < 0x20 || c > 0x7e)
			o += (size_t)snprintf(out + o, outlen - o, "\\x%02x", c);
		else
			out[o++] = (char)c;
	}
	if (outlen)
		out[o < outlen ? o : outlen - 1] = 0;
}

const char *const lh_key_field_names[LH_MAX_KEY_FIELDS] = {
	"tid", "pid", "comm", "start_ns", "cpu", "disk", "op", "cgroup", "cgroup_id",
};

int lh_key_fields(const struct lh_key *k, struct lh_kv out[LH_MAX_KEY_FIELDS])
{
	bool other = k->fields & LH_KEY_OTHER;
	int n = 0;

	/* one field: its value printed into buf, or every field "other" */
#define KV(nm, ...)                                                                      \
	do {                                                                             \
		out[n].name = nm;                                                        \
		out[n].value = out[n].buf;                                               \
		if (other)                                                               \
			snprintf(out[n].buf, sizeof(out[n].buf), "other");               \
		else                                                                     \
			snprintf(out[n].buf, sizeof(out[n].buf), __VA_ARGS__);          \
		n++;                                                                     \
	} while (0)
	if (k->fields & LH_KEY_TID)
		KV("tid", "%u", k->tid);
	if (k->fields & LH_KEY_PID)
		KV("pid", "%u", k->pid);
	if (k->fields & LH_KEY_COMM) {
		KV("comm", "%s", "");
		if (!other)
			lh_printable(k->comm, sizeof(k->comm), out[n - 1].buf, sizeof(out[n - 1].buf));
	}
	if (k->fields & (LH_KEY_TID | LH_KEY_PID))
		KV("start_ns", "%llu", (unsigned long long)k->birth_ns);
	if (k->fields & LH_KEY_CPU)
		KV("cpu", "%u", k->cpu);
	if (k->fields & LH_KEY_DISK)
		KV("disk", "%s", k->disk);
	if (k->fields & LH_KEY_OP)
		KV("op", "%s", k->op);
	if (k->fields & LH_KEY_CGROUP) {
		KV("cgroup", "%s", "");
		if (!other)	/* a path is longer than buf: the interned string itself */
			out[n - 1].value = k->cgroup ? k->cgroup : "";
		KV("cgroup_id", "%llu", (unsigned long long)k->cgroup_id);
	}
#undef KV
	return n;
}

/* lh_cgroup_intern's table: open addressing on the id, kept at most half full. */
static struct {
	uint64_t *ids;
	char **paths;
	size_t cap, n;
} cgroups;

static size_t cgroup_slot(uint64_t id, size_t cap)
{
	size_t j = (size_t)(id * 11400714819323198485ULL) & (cap - 1);

	while (cgroups.paths[j] && cgroups.ids[j] != id)
		j = (j + 1) & (cap - 1);
	return j;
}

/* lathist serve reads several tools' maps at once */
static pthread_mutex_t cgroups_lock = PTHREAD_MUTEX_INITIALIZER;

const char *lh_cgroup_lookup(uint64_t id)
{
	const char *p;

	pthread_mutex_lock(&cgroups_lock);
	p = cgroups.cap ? cgroups.paths[cgroup_slot(id, cgroups.cap)] : NULL;
	pthread_mutex_unlock(&cgroups_lock);
	return p;
}

static const char *cgroup_intern_locked(uint64_t id, const char *path);

const char *lh_cgroup_intern(uint64_t id, const char *path)
{
	const char *p;

	pthread_mutex_lock(&cgroups_lock);
	p = cgroup_intern_locked(id, path);
	pthread_mutex_unlock(&cgroups_lock);
	return p;
}

static const char *cgroup_intern_locked(uint64_t id, const char *path)
{
	size_t j, len;
	char *p;

	if (2 * (cgroups.n + 1) > cgroups.cap) {
		size_t cap = cgroups.cap ? 2 * cgroups.cap : 64;
		uint64_t *ids = calloc(cap, sizeof(*ids)), *old_ids = cgroups.ids;
		char **paths = calloc(cap, sizeof(*paths)), **old_paths = cgroups.paths;
		size_t old_cap = cgroups.cap;

		if (!ids || !paths) {
			free(ids);
			free(paths);
			return NULL;
		}
		cgroups.ids = ids;
		cgroups.paths = paths;
		cgroups.cap = cap;
		for (size_t i = 0; i < old_cap; i++)
			if (old_paths[i]) {
				j = cgroup_slot(old_ids[i], cap);
				ids[j] = old_ids[i];
				paths[j] = old_paths[i];
			}
		free(old_ids);
		free(old_paths);
	}
	j = cgroup_slot(id, cgroups.cap);
	if (cgroups.paths[j])
		return cgroups.paths[j];
	len = strlen(path);
	p = malloc(4 * len + 1);
	if (!p)
		return NULL;
	lh_printable(path, len, p, 4 * len + 1);
	cgroups.ids[j] = id;
	cgroups.paths[j] = p;
	cgroups.n++;
	return p;
}

void lh_report_index_reset(struct lh_report *r)
{
	if (r->index)
		memset(r->index, 0, r->index_cap * sizeof(*r->index));
	r->index_n = 0;
}

/* FNV-1a from h over n bytes. */
static uint64_t fnv(uint64_t h, const void *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		h = (h ^ ((const unsigned char *)p)[i]) * 1099511628211ULL;
	return h;
}

uint64_t lh_key_hash(const struct lh_key *key)
{
	struct lh_key k = *key;

	if (task_key(&k))	/* a task's name is a label, not its identity */
		memset(k.comm, 0, sizeof(k.comm));
	return fnv(14695981039346656037ULL, &k, sizeof(k));
}

bool lh_key_same(const struct lh_key *x, const struct lh_key *y)
{
	struct lh_key a = *x, b = *y;

	if (task_key(&a)) {
		memset(a.comm, 0, sizeof(a.comm));
		memset(b.comm, 0, sizeof(b.comm));
	}
	return !memcmp(&a, &b, sizeof(a));
}

/* FNV-1a over the name and the key's bytes (keys are zero-initialised, padding too). */
static size_t hist_hash(const char *name, const struct lh_key *key)
{
	return (size_t)fnv(lh_key_hash(key), name, strlen(name));
}

static bool hist_is(const struct lh_hist *h, const char *name, const struct lh_key *key)
{
	return !strcmp(h->name, name) && lh_key_same(&h->key, key);
}

/* Put hists[i] in the table (which has a free slot: it is kept at most half full). */
static void index_put(struct lh_report *r, size_t i)
{
	size_t mask = r->index_cap - 1, j = hist_hash(r->hists[i].name, &r->hists[i].key) & mask;

	while (r->index[j])
		j = (j + 1) & mask;
	r->index[j] = i + 1;
}

/* Cover hists[0..nhists] (one more to come) at most half full; -ENOMEM. */
static int index_update(struct lh_report *r)
{
	if (r->index_n > r->nhists)	/* hists were cleared under it */
		lh_report_index_reset(r);
	if (2 * (r->nhists + 1) > r->index_cap) {
		size_t cap = r->index_cap ? r->index_cap : 64;
		size_t *n;

		while (2 * (r->nhists + 1) > cap)
			cap *= 2;
		n = calloc(cap, sizeof(*n));
		if (!n)
			return -ENOMEM;
		free(r->index);
		r->index = n;
		r->index_cap = cap;
		r->index_n = 0;
	}
	for (; r->index_n < r->nhists; r->index_n++)
		index_put(r, r->index_n);
	return 0;
}

struct lh_hist *lh_report_find_hist(struct lh_report *r, const char *name,
				    const struct lh_key *key)
{
	struct lh_hist *h;
	size_t mask, j;

	if (index_update(r))
		return NULL;
	mask = r->index_cap - 1;
	for (j = hist_hash(name, key) & mask; r->index[j]; j = (j + 1) & mask)
		if (hist_is(&r->hists[r->index[j] - 1], name, key))
			return &r->hists[r->index[j] - 1];
	h = lh_report_add_hist(r, name, key);
	if (h)
		r->index[j] = ++r->index_n;	/* the free slot the probe ended on */
	return h;
}

/* Where (key, event) is or goes in an open-addressing table of cap slots (a power of
 * two) over dst's counter rows: row index + 1, 0 empty. */
static size_t pmu_slot(const struct lh_report *dst, const size_t *t, size_t cap,
		       const struct lh_key *key, int event)
{
	size_t j = (size_t)(lh_key_hash(key) * 31 + (uint64_t)(unsigned int)event) & (cap - 1);

	for (; t[j]; j = (j + 1) & (cap - 1)) {
		const struct lh_pmu_row *d = &dst->pmu[t[j] - 1];

		if (d->event == event && !memcmp(&d->key, key, sizeof(*key)))
			break;
	}
	return j;
}

/* dst += src's counter rows, each matched through a hash table of dst's (built here,
 * at most half full): linear in the rows, not rows x rows. -ENOMEM. */
static int accumulate_pmu(struct lh_report *dst, const struct lh_report *src)
{
	size_t cap = 64, *t;

	if (!src->npmu)
		return 0;
	while (cap < 2 * (dst->npmu + src->npmu))
		cap *= 2;
	t = calloc(cap, sizeof(*t));
	if (!t)
		return -ENOMEM;
	for (size_t i = 0; i < dst->npmu; i++)
		t[pmu_slot(dst, t, cap, &dst->pmu[i].key, dst->pmu[i].event)] = i + 1;
	for (size_t i = 0; i < src->npmu; i++) {
		const struct lh_pmu_row *w = &src->pmu[i];
		size_t j = pmu_slot(dst, t, cap, &w->key, w->event);
		struct lh_pmu_row *d;

		if (!t[j]) {
			if (!lh_report_add_pmu(dst, &w->key, w->event)) {
				free(t);
				return -ENOMEM;
			}
			t[j] = dst->npmu;
		}
		d = &dst->pmu[t[j] - 1];
		d->raw = lh_add_sat(d->raw, w->raw);
		d->enabled_ns = lh_add_sat(d->enabled_ns, w->enabled_ns);
		d->running_ns = lh_add_sat(d->running_ns, w->running_ns);
		d->slices = lh_add_sat(d->slices, w->slices);
		d->multiplexed = lh_add_sat(d->multiplexed, w->multiplexed);
		d->read_failed = lh_add_sat(d->read_failed, w->read_failed);
		d->oncpu_ns = lh_add_sat(d->oncpu_ns, w->oncpu_ns);
	}
	free(t);
	return 0;
}

int lh_report_accumulate(struct lh_report *dst, const struct lh_report *src)
{
	return lh_report_merge(dst, src, true);
}

int lh_report_merge(struct lh_report *dst, const struct lh_report *src, bool sort)
{
	for (size_t i = 0; i < src->nhists; i++) {
		const struct lh_hist *h = &src->hists[i];
		struct lh_hist *d = lh_report_find_hist(dst, h->name, &h->key);

		if (!d)
			return -ENOMEM;
		if (lh_hist_merge(d, h))
			return -EINVAL;
	}
	if (accumulate_pmu(dst, src))
		return -ENOMEM;
	for (int i = 0; i < LH_NR_COUNTERS; i++)
		dst->counters[i] = lh_add_sat(dst->counters[i], src->counters[i]);
	for (size_t i = 0; i < src->ncharges; i++)
		if (lh_report_charge(dst, &src->charges[i]))
			return -ENOMEM;
	if (lh_report_gaps(dst, src->gap_ncpus))
		return -ENOMEM;
	for (uint32_t i = 0; i < src->gap_ncpus; i++)
		dst->gap_cpu[i] = lh_add_sat(dst->gap_cpu[i], src->gap_cpu[i]);
	if (sort)
		lh_report_sort(dst);
	return 0;
}

size_t lh_pmu_key_end(const struct lh_report *r, size_t a)
{
	size_t b = a + 1;

	while (b < r->npmu && !memcmp(&r->pmu[b].key, &r->pmu[a].key, sizeof(r->pmu[a].key)))
		b++;
	return b;
}

int lh_pmu_ipc(const struct lh_report *r, size_t a, size_t b, double *ipc, bool *estimated)
{
	const struct lh_pmu_row *ins = NULL, *cyc = NULL;

	for (size_t i = a; i < b; i++) {
		const char *n = r->meta.pmu.names[r->pmu[i].event];

		if (!strcmp(n, "instructions"))
			ins = &r->pmu[i];
		else if (!strcmp(n, "cycles") || !strcmp(n, "cpu-cycles"))
			cyc = &r->pmu[i];
	}
	if (!ins || !cyc)
		return -ENOENT;
	return lh_pmu_ratio(ins->raw, ins->enabled_ns, ins->running_ns, cyc->raw,
			    cyc->enabled_ns, cyc->running_ns, ipc, estimated) ? 0 : -EDOM;
}

const char *lh_context_str(const struct lh_meta *m, const char *field)
{
	json_object *v;

	if (!m->context || !json_object_object_get_ex(m->context, field, &v) ||
	    !json_object_is_type(v, json_type_string))
		return NULL;
	return json_object_get_string(v);
}
