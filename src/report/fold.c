// SPDX-License-Identifier: MIT
/* Cumulative totals with a bounded number of series (fold.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <json-c/json.h>
#include "fold.h"

void lh_fold_init(struct lh_fold *f, const struct lh_fold_opts *o)
{
	memset(f, 0, sizeof(*f));
	f->o = *o;
}

void lh_fold_free(struct lh_fold *f)
{
	json_object_put(f->cum.meta.context);
	lh_report_clear(&f->cum);
	free(f->keys);
	memset(f, 0, sizeof(*f));
}

/* The slot of key in a table of cap slots: its own, or the free one to take. */
static size_t slot_of(struct lh_fold_key *keys, size_t cap, const struct lh_key *key)
{
	size_t j = (size_t)lh_key_hash(key) & (cap - 1);

	while (keys[j].state && !lh_key_same(&keys[j].key, key))
		j = (j + 1) & (cap - 1);
	return j;
}

/* Rebuild the table at cap slots with the keys kept (state non-zero). */
static int rehash(struct lh_fold *f, size_t cap)
{
	struct lh_fold_key *keys = calloc(cap, sizeof(*keys));

	if (!keys)
		return -ENOMEM;
	for (size_t i = 0; i < f->cap; i++)
		if (f->keys[i].state)
			keys[slot_of(keys, cap, &f->keys[i].key)] = f->keys[i];
	free(f->keys);
	f->keys = keys;
	f->cap = cap;
	return 0;
}

/* key's state, made (a series if there is room, else waiting in other) when new. */
static struct lh_fold_key *key_get(struct lh_fold *f, const struct lh_key *key)
{
	struct lh_fold_key *k;

	if (2 * (f->nkeys + 1) > f->cap && rehash(f, f->cap ? 2 * f->cap : 64))
		return NULL;
	k = &f->keys[slot_of(f->keys, f->cap, key)];
	if (k->state)
		return k;
	k->key = *key;
	if (!f->o.max_series || f->nown < f->o.max_series) {
		k->state = LH_FOLD_OWN;
		f->nown++;
	} else {
		k->state = LH_FOLD_WAITING;
		f->folded++;
	}
	f->nkeys++;
	return k;
}

static struct lh_fold_key *key_find(struct lh_fold *f, const struct lh_key *key)
{
	struct lh_fold_key *k;

	if (!f->cap)
		return NULL;
	k = &f->keys[slot_of(f->keys, f->cap, key)];
	return k->state ? k : NULL;
}

/* The key other's counts go to for keys of these fields. */
static struct lh_key other_of(const struct lh_key *k)
{
	struct lh_key o = { .fields = k->fields | LH_KEY_OTHER };

	return o;
}

/* Add h into the histogram of cum named as h with key dst. */
static int add_into(struct lh_report *cum, const struct lh_hist *h, const struct lh_key *dst)
{
	struct lh_hist *d = lh_report_find_hist(cum, h->name, dst);

	if (!d)
		return -ENOMEM;
	return lh_hist_merge(d, h) ? -EINVAL : 0;
}

/* Only a key of a task or a cgroup idles out: CPUs, disks and operations are few,
 * and stay. */
static bool may_idle(const struct lh_key *k)
{
	return k->fields & (LH_KEY_PID | LH_KEY_TID | LH_KEY_CGROUP);
}

/* Count h's events as retired under its name (fold.h retired[]). */
static void tally_retired(struct lh_fold *f, const struct lh_hist *h)
{
	int i;

	for (i = 0; i < f->nretired && strcmp(f->retired[i].name, h->name); i++)
		;
	if (i == f->nretired) {
		if (i == LH_FOLD_MAX_KINDS)
			return;
		snprintf(f->retired[i].name, sizeof(f->retired[i].name), "%s", h->name);
		f->nretired++;
	}
	f->retired[i].count = lh_add_sat(f->retired[i].count, h->count);
}

/*
 * Keys of tasks and cgroups with no event for idle_ns lose their series: their
 * histograms are dropped (their counts tallied in retired[]), not moved into
 * other, which would show Prometheus's rate() and increase() a burst of events
 * that happened long before; later events of such a key go to other.
 */
static int retire_idle(struct lh_fold *f, uint64_t now)
{
	size_t kept = 0;
	bool any = false;

	if (!f->o.idle_ns)
		return 0;
	for (size_t i = 0; i < f->cap; i++) {
		struct lh_fold_key *k = &f->keys[i];

		if (k->state == LH_FOLD_OWN && now - k->last_ns >= f->o.idle_ns &&
		    may_idle(&k->key)) {
			k->state = LH_FOLD_RETIRED;
			f->nown--;
			f->folded++;
			any = true;
		}
	}
	if (!any)
		return 0;
	for (size_t i = 0; i < f->cum.nhists; i++) {
		struct lh_fold_key *k = key_find(f, &f->cum.hists[i].key);

		if (k && k->state == LH_FOLD_RETIRED) {
			tally_retired(f, &f->cum.hists[i]);
			lh_hist_free(&f->cum.hists[i]);
		} else {
			f->cum.hists[kept++] = f->cum.hists[i];
		}
	}
	f->cum.nhists = kept;
	lh_report_index_reset(&f->cum);
	return 0;
}

static int by_busy(const void *a, const void *b)
{
	const struct lh_fold_key *x = *(struct lh_fold_key *const *)a;
	const struct lh_fold_key *y = *(struct lh_fold_key *const *)b;

	return x->busy > y->busy ? -1 : x->busy < y->busy;
}

/* Free series go to the busiest keys waiting (seen in this interval). */
static int promote(struct lh_fold *f, uint64_t now)
{
	struct lh_fold_key **w;
	size_t n = 0;

	if (!f->o.max_series || f->nown >= f->o.max_series)
		return 0;
	w = malloc((f->nkeys ? f->nkeys : 1) * sizeof(*w));
	if (!w)
		return -ENOMEM;
	for (size_t i = 0; i < f->cap; i++)
		if (f->keys[i].state == LH_FOLD_WAITING && f->keys[i].last_ns == now)
			w[n++] = &f->keys[i];
	qsort(w, n, sizeof(*w), by_busy);
	for (size_t i = 0; i < n && f->nown < f->o.max_series; i++) {
		w[i]->state = LH_FOLD_OWN;	/* a series it never had: from 0 */
		f->nown++;
	}
	free(w);
	return 0;
}

/* Halve every key's busyness; forget keys long out of the picture: waiting ones
 * (they never had a series) and retired ones that cannot come back. */
static int age(struct lh_fold *f, uint64_t now)
{
	bool gone = false;

	for (size_t i = 0; i < f->cap; i++) {
		struct lh_fold_key *k = &f->keys[i];

		if (!k->state)
			continue;
		k->busy /= 2;
		if (!f->o.idle_ns || k->state == LH_FOLD_OWN || now - k->last_ns < 2 * f->o.idle_ns ||
		    !may_idle(&k->key))
			continue;
		/* may_return reads /proc or walks cgroupfs, under the aggregate's lock that
		 * scrapes wait on: once per idle_ns per key, not every interval */
		if (k->state == LH_FOLD_RETIRED &&
		    (!f->o.may_return || now - k->asked_ns < f->o.idle_ns))
			continue;
		if (k->state == LH_FOLD_RETIRED && f->o.may_return(&k->key)) {
			k->asked_ns = now;
			continue;
		}
		k->state = 0;
		f->nkeys--;
		gone = true;
	}
	return gone ? rehash(f, f->cap) : 0;
}

int lh_fold_add(struct lh_fold *f, const struct lh_report *iv, uint64_t now)
{
	int err = 0;

	if (!f->first_ns) {
		f->first_ns = now;
		f->first_start_ns = iv->meta.start_realtime_ns;
	} else if (iv->meta.scheme.precision != f->cum.meta.scheme.precision ||
		   iv->meta.scheme.unit_ns != f->cum.meta.scheme.unit_ns) {
		return -EINVAL;
	}
	f->covered_ns += iv->meta.duration_ns;
	/* meta.context is the session's: hold a reference, so that a scrape after the
	 * tool's session has ended still finds it */
	json_object_get(iv->meta.context);
	json_object_put(f->cum.meta.context);
	f->cum.meta = iv->meta;
	f->cum.meta.start_realtime_ns = f->first_start_ns;
	f->cum.meta.duration_ns = f->covered_ns;
	f->cum.meta.interval_index = 0;
	for (size_t i = 0; i < iv->nhists && !err; i++) {
		const struct lh_hist *h = &iv->hists[i];
		struct lh_fold_key *k = key_get(f, &h->key);
		struct lh_key o;

		if (!k)
			return -ENOMEM;
		k->last_ns = now;
		k->busy += h->count;
		o = other_of(&h->key);
		err = add_into(&f->cum, h, k->state == LH_FOLD_OWN ? &h->key : &o);
	}
	if (err)
		return err;
	for (int i = 0; i < LH_NR_COUNTERS; i++)
		f->cum.counters[i] = lh_add_sat(f->cum.counters[i], iv->counters[i]);
	if (lh_report_gaps(&f->cum, iv->gap_ncpus))
		return -ENOMEM;
	for (uint32_t i = 0; i < iv->gap_ncpus; i++)
		f->cum.gap_cpu[i] = lh_add_sat(f->cum.gap_cpu[i], iv->gap_cpu[i]);
	/* a gauge, not a count: the end sweep's finding */
	f->cum.counters[LH_GAP_HIDDEN_TASKS] = iv->counters[LH_GAP_HIDDEN_TASKS];
	err = retire_idle(f, now);
	if (!err)
		err = promote(f, now);
	if (!err)
		err = age(f, now);
	return err;
}
