// SPDX-License-Identifier: MIT
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "hist.h"

const struct lh_percentile lh_percentiles[LH_NR_PERCENTILES] = {
	{ "p50", 500 }, { "p90", 900 }, { "p99", 990 }, { "p99.9", 999 },
};

uint64_t lh_slot_lo(uint32_t i, uint32_t p)
{
	uint32_t g = i >> p, sub = i & ((1U << p) - 1);

	if (g == 0)
		return i;
	return (uint64_t)((1U << p) | sub) << (g - 1);
}

uint64_t lh_slot_hi(uint32_t i, uint32_t p)
{
	uint32_t g = i >> p;

	if (i + 1 >= LH_NSLOTS(p))
		return UINT64_MAX;
	if (g == 0)
		return (uint64_t)i + 1;
	return lh_slot_lo(i, p) + (1ULL << (g - 1));
}

void lh_hist_init_with(struct lh_hist *h, const char *name, const struct lh_key *key,
		       const struct lh_scheme *s, uint64_t *slots)
{
	memset(h, 0, sizeof(*h));
	strncpy(h->name, name, sizeof(h->name) - 1);
	if (key)
		h->key = *key;
	h->nslots = lh_nslots(s);
	h->slots = slots;
	if (slots)
		memset(slots, 0, h->nslots * sizeof(*slots));
}

int lh_hist_init(struct lh_hist *h, const char *name, const struct lh_key *key,
		 const struct lh_scheme *s)
{
	lh_hist_init_with(h, name, key, s, NULL);
	h->slots = calloc(h->nslots, sizeof(*h->slots));
	return h->slots ? 0 : -ENOMEM;
}

void lh_hist_free(struct lh_hist *h)
{
	free(h->slots);
	h->slots = NULL;
	h->nslots = 0;
}

void lh_hist_add_raw(struct lh_hist *h, const void *raw)
{
	const struct lh_hist_head *head = raw;
	const uint64_t *slots = (const uint64_t *)(head + 1);

	for (uint32_t i = 0; i < h->nslots; i++) {
		if (!slots[i])		/* most are: a key's events fill a few slots */
			continue;
		h->slots[i] = lh_add_sat(h->slots[i], slots[i]);
		h->count = lh_add_sat(h->count, slots[i]);
	}
	h->sum_ns = lh_add_sat(h->sum_ns, head->sum_ns);
	h->bytes = lh_add_sat(h->bytes, head->bytes);
	if (head->max_ns > h->max_ns)
		h->max_ns = head->max_ns;
	/* per-CPU copies each took the name at their first event: the earliest */
	if (head->comm[0] && (h->key.fields & LH_KEY_COMM) &&
	    (!h->key.comm[0] || head->comm_ns < h->name_ns)) {
		memset(h->key.comm, 0, sizeof(h->key.comm));
		memcpy(h->key.comm, head->comm, sizeof(h->key.comm) - 1);
		h->name_ns = head->comm_ns;
	}
}

bool lh_hist_raw_empty(const void *raw, uint32_t nslots)
{
	const uint64_t *slots = (const uint64_t *)((const struct lh_hist_head *)raw + 1);

	for (uint32_t i = 0; i < nslots; i++)
		if (slots[i])
			return false;
	return true;
}

int lh_hist_merge(struct lh_hist *h, const struct lh_hist *o)
{
	if (h->nslots != o->nslots)
		return -EINVAL;
	for (uint32_t i = 0; i < h->nslots; i++)
		h->slots[i] = lh_add_sat(h->slots[i], o->slots[i]);
	h->count = lh_add_sat(h->count, o->count);
	h->sum_ns = lh_add_sat(h->sum_ns, o->sum_ns);
	h->bytes = lh_add_sat(h->bytes, o->bytes);
	if (o->max_ns > h->max_ns)
		h->max_ns = o->max_ns;
	if (o->key.comm[0] && (h->key.fields & LH_KEY_COMM) &&	/* the earlier name */
	    (!h->key.comm[0] || (o->name_ns && (!h->name_ns || o->name_ns < h->name_ns)))) {
		memcpy(h->key.comm, o->key.comm, sizeof(h->key.comm));
		h->name_ns = o->name_ns;
	}
	return 0;
}

/* The slot where the cumulative count of h's slots, plus extra events in
 * slot 0 (below) or past the last slot (above), reaches rank. */
static int rank_slot(const struct lh_hist *h, uint64_t rank, uint64_t below)
{
	unsigned __int128 cum = below;

	for (uint32_t i = 0; i < h->nslots; i++) {
		cum += h->slots[i];
		if (cum >= rank)
			return (int)i;
	}
	return (int)h->nslots - 1;
}

/* ceil(n * permille / 1000) without overflow: the rank of a quantile of n events. */
static uint64_t quantile_rank(unsigned __int128 n, unsigned int permille)
{
	unsigned __int128 r = (n * permille + 999) / 1000;

	return r > UINT64_MAX ? UINT64_MAX : (uint64_t)r;
}

int lh_hist_quantile_slot(const struct lh_hist *h, unsigned int permille)
{
	if (!h->count || !permille || permille > 1000)
		return -1;
	return rank_slot(h, quantile_rank(h->count, permille), 0);
}

int lh_hist_quantile_bounds(const struct lh_hist *h, unsigned int permille, uint64_t lost,
			    int *low, int *high)
{
	uint64_t rank;

	if (!h->count || !permille || permille > 1000)
		return -EINVAL;
	rank = quantile_rank((unsigned __int128)h->count + lost, permille);
	*low = rank_slot(h, rank, lost);
	*high = rank_slot(h, rank, 0);
	return 0;
}

/* For ranks ascending, out[j] = rank_slot(h, rank[j], below), in one pass over
 * the slots up to last, h's last slot that is not empty (-1: none is; slot 0
 * is passed still, for the ranks that below reaches): past it the cumulative
 * count grows no more, and a rank it has not reached is never reached
 * (rank_slot's answer for those: the last slot). */
static void rank_slots(const struct lh_hist *h, const uint64_t *rank, size_t n, uint64_t below,
		       int last, int *out)
{
	unsigned __int128 cum = below;
	size_t j = 0;

	for (int i = 0; i <= (last > 0 ? last : 0) && j < n; i++) {	/* slot 0 takes below */
		cum += h->slots[i];
		while (j < n && cum >= rank[j])
			out[j++] = i;
	}
	while (j < n)
		out[j++] = (int)h->nslots - 1;
}

int lh_hist_quantile_slots(const struct lh_hist *h, const struct lh_percentile *q, size_t n,
			   uint64_t lost, int *slot, int *low, int *high)
{
	uint64_t rank[LH_MAX_QUANTILES] = { 0 };	/* all set below; gcc cannot tell */
	int last = (int)h->nslots - 1;

	if (!h->count || n > LH_MAX_QUANTILES)
		return -EINVAL;
	for (size_t i = 0; i < n; i++)
		if (!q[i].permille || q[i].permille > 1000 ||
		    (i && q[i].permille < q[i - 1].permille))
			return -EINVAL;
	while (last >= 0 && !h->slots[last])
		last--;
	for (size_t i = 0; i < n; i++)
		rank[i] = quantile_rank(h->count, q[i].permille);
	rank_slots(h, rank, n, 0, last, slot);
	if (!low || !high)
		return 0;
	for (size_t i = 0; i < n; i++)
		rank[i] = quantile_rank((unsigned __int128)h->count + lost, q[i].permille);
	rank_slots(h, rank, n, lost, last, low);
	rank_slots(h, rank, n, 0, last, high);
	return 0;
}
