/*
 * halo_plan.c: building a domain's ghost routing (halo_plan.h) from its ghosts' owners and from
 * what its peers ask of it. Everything is counting sorts, so the lists' order is a function of
 * the input alone: that order is what makes the reverse sum reproducible.
 */
#include "halo_plan.h"

#include <stdlib.h>
#include <string.h>

#include "halo_error.h"

static void free_send_side(struct fnq_halo_plan *plan)
{
    free(plan->send_start), free(plan->send_index);
    free(plan->sum_atom), free(plan->sum_start), free(plan->sum_slot);
    plan->send_start = plan->send_index = NULL;
    plan->sum_atom = plan->sum_start = plan->sum_slot = NULL;
    plan->n_sum = 0;
}

void fnq_halo_plan_free(struct fnq_halo_plan *plan)
{
    if (!plan)
        return;
    free_send_side(plan);
    free(plan->recv_start), free(plan->recv_index), free(plan->request_index);
    memset(plan, 0, sizeof(*plan));
}

/* calloc that never asks for 0 bytes, so NULL always means out of memory */
static int64_t *alloc_index(int64_t n) { return calloc(n > 0 ? (size_t)n : 1, sizeof(int64_t)); }

static enum fnq_status check_ghosts(int32_t n_ranks, int32_t rank, int64_t n_local,
                                    int64_t n_all, const int32_t *ghost_rank,
                                    const int64_t *ghost_index)
{
    if (n_ranks < 1 || rank < 0 || rank >= n_ranks || n_local < 0 || n_all < n_local)
        return halo_fail(FNQ_STATUS_INVALID_ARG,
                         "halo plan: bad sizes (rank %d of %d ranks, %lld owned atoms, %lld in "
                         "all)",
                         rank, n_ranks, (long long)n_local, (long long)n_all);
    if (n_all > n_local && (!ghost_rank || !ghost_index))
        return halo_fail(FNQ_STATUS_INVALID_ARG,
                         "halo plan: rank %d has %lld ghosts but no ghost_rank or ghost_index",
                         rank, (long long)(n_all - n_local));
    for (int64_t k = 0; k < n_all - n_local; k++) {
        const int64_t ghost = n_local + k;
        if (ghost_rank[k] == FNQ_HALO_NO_ROW)
            continue;
        if (ghost_rank[k] < 0 || ghost_rank[k] >= n_ranks)
            return halo_fail(FNQ_STATUS_INVALID_ARG,
                             "halo plan: ghost atom %lld of rank %d has owner rank %d, outside "
                             "0..%d",
                             (long long)ghost, rank, ghost_rank[k], n_ranks - 1);
        if (ghost_index[k] < 0)
            return halo_fail(FNQ_STATUS_INVALID_ARG,
                             "halo plan: ghost atom %lld of rank %d images atom %lld of rank %d: "
                             "a negative index",
                             (long long)ghost, rank, (long long)ghost_index[k], ghost_rank[k]);
        if (ghost_rank[k] == rank && ghost_index[k] >= n_local)
            return halo_fail(FNQ_STATUS_INVALID_ARG,
                             "halo plan: ghost atom %lld of rank %d images own atom %lld, but "
                             "rank %d owns %lld atoms (0..%lld)",
                             (long long)ghost, rank, (long long)ghost_index[k], rank,
                             (long long)n_local, (long long)n_local - 1);
    }
    return FNQ_STATUS_OK;
}

enum fnq_status fnq_halo_plan_set_ghosts(struct fnq_halo_plan *plan, int32_t n_ranks,
                                         int32_t rank, int64_t n_local, int64_t n_all,
                                         const int32_t *ghost_rank, const int64_t *ghost_index)
{
    if (!plan)
        return halo_fail(FNQ_STATUS_INVALID_ARG, "halo plan: NULL plan");
    fnq_halo_plan_free(plan);
    HALO_CHECK(check_ghosts(n_ranks, rank, n_local, n_all, ghost_rank, ghost_index));
    const int64_t n_ghosts = n_all - n_local;
    plan->n_ranks = n_ranks, plan->rank = rank;
    plan->n_local = n_local, plan->n_all = n_all;
    plan->recv_start = alloc_index((int64_t)n_ranks + 1);
    plan->recv_index = alloc_index(n_ghosts);
    plan->request_index = alloc_index(n_ghosts);
    int64_t *cursor = alloc_index(n_ranks);
    if (!plan->recv_start || !plan->recv_index || !plan->request_index || !cursor) {
        free(cursor);
        fnq_halo_plan_free(plan);
        return halo_fail(FNQ_STATUS_OUT_OF_MEMORY, "halo plan: out of memory for %lld ghosts",
                         (long long)n_ghosts);
    }
    /* counting sort by peer; ghosts stay ascending within a peer; ghosts without a row
     * (FNQ_HALO_NO_ROW) are left out */
    for (int64_t k = 0; k < n_ghosts; k++)
        if (ghost_rank[k] != FNQ_HALO_NO_ROW)
            plan->recv_start[ghost_rank[k] + 1]++;
    for (int32_t p = 0; p < n_ranks; p++)
        plan->recv_start[p + 1] += plan->recv_start[p];
    memcpy(cursor, plan->recv_start, sizeof(int64_t) * (size_t)n_ranks);
    for (int64_t k = 0; k < n_ghosts; k++) {
        if (ghost_rank[k] == FNQ_HALO_NO_ROW)
            continue;
        const int64_t at = cursor[ghost_rank[k]]++;
        plan->recv_index[at] = n_local + k;
        plan->request_index[at] = ghost_index[k];
    }
    free(cursor);
    return FNQ_STATUS_OK;
}

static enum fnq_status check_requests(const struct fnq_halo_plan *plan, const int64_t *count_from,
                                      const int64_t *index_from)
{
    const int32_t me = plan->rank;
    int64_t at = 0;
    for (int32_t p = 0; p < plan->n_ranks; p++) {
        if (count_from[p] < 0)
            return halo_fail(FNQ_STATUS_INVALID_ARG,
                             "halo plan: peer %d asks rank %d for %lld rows", p, me,
                             (long long)count_from[p]);
        if (count_from[p] > 0 && !index_from)
            return halo_fail(FNQ_STATUS_INVALID_ARG, "halo plan: rank %d: NULL index_from", me);
        for (int64_t k = 0; k < count_from[p]; k++, at++)
            if (index_from[at] < 0 || index_from[at] >= plan->n_local)
                /* the peer's k-th ghost imaged from this rank, in its recv_index order */
                return halo_fail(FNQ_STATUS_INVALID_ARG,
                                 "halo plan: peer %d asks rank %d for atom %lld (its ghost "
                                 "request %lld to rank %d), but rank %d owns %lld atoms "
                                 "(0..%lld)",
                                 p, me, (long long)index_from[at], (long long)k, me, me,
                                 (long long)plan->n_local, (long long)plan->n_local - 1);
    }
    /* a domain's requests to itself come from its own recv list: anything else is a transport
     * that mixed up its peers */
    const int64_t self_at = plan->recv_start[me], self_n = plan->recv_start[me + 1] - self_at;
    int64_t self_from = 0;
    for (int32_t p = 0; p < me; p++)
        self_from += count_from[p];
    if (count_from[me] != self_n ||
        (self_n > 0 && memcmp(index_from + self_from, plan->request_index + self_at,
                              sizeof(int64_t) * (size_t)self_n) != 0))
        return halo_fail(FNQ_STATUS_INVALID_ARG,
                         "halo plan: rank %d's requests to itself (%lld rows) are not its own "
                         "periodic images (%lld rows)",
                         me, (long long)count_from[me], (long long)self_n);
    return FNQ_STATUS_OK;
}

/* The reverse sum's lists: for each owned atom that is sent anywhere, its slots in ascending
 * order (peers by rank, then list order). */
static enum fnq_status build_sum_lists(struct fnq_halo_plan *plan)
{
    const int64_t n_send = fnq_halo_plan_n_send(plan), n_local = plan->n_local;
    int64_t *slots_of = alloc_index(n_local); /* slots per atom, then the atom's cursor */
    if (!slots_of)
        return halo_fail(FNQ_STATUS_OUT_OF_MEMORY, "halo plan: out of memory");
    for (int64_t s = 0; s < n_send; s++)
        slots_of[plan->send_index[s]]++;
    int64_t n_sum = 0;
    for (int64_t a = 0; a < n_local; a++)
        n_sum += slots_of[a] > 0;
    plan->n_sum = n_sum;
    plan->sum_atom = alloc_index(n_sum);
    plan->sum_start = alloc_index(n_sum + 1);
    plan->sum_slot = alloc_index(n_send);
    if (!plan->sum_atom || !plan->sum_start || !plan->sum_slot) {
        free(slots_of);
        return halo_fail(FNQ_STATUS_OUT_OF_MEMORY, "halo plan: out of memory for %lld slots",
                         (long long)n_send);
    }
    int64_t k = 0;
    for (int64_t a = 0; a < n_local; a++)
        if (slots_of[a] > 0) {
            plan->sum_atom[k] = a;
            plan->sum_start[k + 1] = plan->sum_start[k] + slots_of[a];
            slots_of[a] = plan->sum_start[k]; /* from here on: where the atom's next slot goes */
            k++;
        }
    for (int64_t s = 0; s < n_send; s++)
        plan->sum_slot[slots_of[plan->send_index[s]]++] = s;
    free(slots_of);
    return FNQ_STATUS_OK;
}

enum fnq_status fnq_halo_plan_set_requests(struct fnq_halo_plan *plan, const int64_t *count_from,
                                           const int64_t *index_from)
{
    if (!plan || !plan->recv_start)
        return halo_fail(FNQ_STATUS_INVALID_ARG,
                         "halo plan: set the receive side (fnq_halo_plan_set_ghosts) first");
    if (!count_from)
        return halo_fail(FNQ_STATUS_INVALID_ARG, "halo plan: rank %d: NULL count_from",
                         plan->rank);
    free_send_side(plan);
    HALO_CHECK(check_requests(plan, count_from, index_from));
    const int32_t n_ranks = plan->n_ranks;
    plan->send_start = alloc_index((int64_t)n_ranks + 1);
    if (plan->send_start)
        for (int32_t p = 0; p < n_ranks; p++)
            plan->send_start[p + 1] = plan->send_start[p] + count_from[p];
    const int64_t n_send = plan->send_start ? plan->send_start[n_ranks] : 0;
    plan->send_index = alloc_index(n_send);
    if (!plan->send_start || !plan->send_index) {
        free_send_side(plan);
        return halo_fail(FNQ_STATUS_OUT_OF_MEMORY, "halo plan: out of memory for %lld rows",
                         (long long)n_send);
    }
    if (n_send > 0)
        memcpy(plan->send_index, index_from, sizeof(int64_t) * (size_t)n_send);
    enum fnq_status st = build_sum_lists(plan);
    if (st != FNQ_STATUS_OK)
        free_send_side(plan);
    return st;
}
