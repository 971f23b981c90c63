/*
 * halo_plan.h: the routing of ghost rows between domains (MPI ranks, or threads in a test),
 * built once per neighbour-list rebuild and used by every exchange until the next one.
 *
 * Each ghost atom is an image of a row that some domain owns. Instead of LAMMPS' sequence of
 * dependent swaps (a row may travel through several ranks), the plan lists for each peer the
 * rows that go directly to it and the ghost rows that come directly from it, so one exchange is
 * one round of concurrent messages. Periodic images of a domain's own atoms are a "peer" like
 * any other (peer == rank): a local copy. The reverse direction runs the same lists backwards
 * and sums the arriving rows into their owners in a fixed order, so the results are bitwise
 * reproducible run to run.
 *
 * Building a plan (no transport here: the requests travel through whatever the caller has,
 * MPI_Alltoall(v) or memory):
 *     struct fnq_halo_plan plan = {0};
 *     fnq_halo_plan_set_ghosts(&plan, n_ranks, rank, n_local, n_all, ghost_rank, ghost_index);
 *     send to each peer p its request_index[recv_start[p] .. recv_start[p+1]), and receive
 *     from each peer the indices it asks of this domain (count_from[p], then concatenated);
 *     fnq_halo_plan_set_requests(&plan, count_from, index_from);
 *     ... exchanges (halo_rows.h) ...
 *     fnq_halo_plan_free(&plan);
 */
#pragma once

#include <stdint.h>

#include "fnq.h"

/* the ghost_rank of a ghost that needs no row (fnq_halo_plan_set_ghosts, fnq_halo_set_routing) */
#define FNQ_HALO_NO_ROW (-1)

#ifdef __cplusplus
extern "C" {
#endif

/* One domain's routing of ghost rows among n_ranks domains, built once per neighbour-list
 * rebuild.
 * Forward (owned -> ghost): this domain sends to peer p its owned rows send_index[send_start[p]
 * .. send_start[p+1]) in that order, and writes the rows received from p into its ghost rows
 * recv_index[recv_start[p] .. recv_start[p+1]). Peer p == rank (periodic images of own atoms)
 * is a local copy.
 * Reverse (ghost -> owner): the same lists backwards: ghost rows recv_index[...] go to peer p,
 * and the rows arriving from p land in a buffer laid out like send_index (slot s = row for
 * owned atom send_index[s]); then owned atom sum_atom[k] adds slots sum_slot[sum_start[k] ..
 * sum_start[k+1]) in that order (peers by rank, then list order): a fixed order, so results
 * are bitwise reproducible. */
struct fnq_halo_plan {
    int32_t n_ranks, rank;
    int64_t n_local, n_all;            /* owned atoms 0..n_local-1, ghosts n_local..n_all-1 */
    int64_t *send_start, *send_index;  /* [n_ranks+1], [n_send] */
    int64_t *recv_start, *recv_index;  /* [n_ranks+1], [n_recv] */
    int64_t *request_index;            /* [n_recv]: owner-side index of each recv row (what we
                                          ask peer p to send) */
    int64_t n_sum;                     /* owned atoms with at least one slot */
    int64_t *sum_atom, *sum_start, *sum_slot; /* [n_sum], [n_sum+1], [n_send] */
};

/* Rows this domain sends per forward exchange (= receives per reverse one), and the converse;
 * 0 while that side of the plan is not built. */
static inline int64_t fnq_halo_plan_n_send(const struct fnq_halo_plan *plan)
{
    return plan->send_start ? plan->send_start[plan->n_ranks] : 0;
}
static inline int64_t fnq_halo_plan_n_recv(const struct fnq_halo_plan *plan)
{
    return plan->recv_start ? plan->recv_start[plan->n_ranks] : 0;
}

/*
 * The receive side, from each ghost's owner: ghost n_local + k is an image of row
 * ghost_index[k] owned by domain ghost_rank[k] (k < n_all - n_local), or needs no row
 * (ghost_rank[k] == FNQ_HALO_NO_ROW, e.g. an own image the caller folds). Fills n_ranks, rank,
 * n_local, n_all, recv_start, recv_index (grouped by peer, ghosts ascending within a peer) and
 * request_index; clears the send side. `plan` is zeroed or holds an earlier plan (replaced).
 * A ghost whose rank is out of range, whose index is negative, or that images an own atom
 * (rank == this rank) that does not exist fails with FNQ_STATUS_INVALID_ARG naming the ghost.
 * (An index beyond another domain's atoms can only be seen there: fnq_halo_plan_set_requests.)
 */
enum fnq_status fnq_halo_plan_set_ghosts(struct fnq_halo_plan *plan, int32_t n_ranks,
                                         int32_t rank, int64_t n_local, int64_t n_all,
                                         const int32_t *ghost_rank, const int64_t *ghost_index);

/*
 * The send side, from what each peer asked for: count_from[p] rows for peer p (p = 0..n_ranks-1),
 * their owned indices concatenated by peer in index_from (peer p's k-th index is the row of
 * its k-th ghost imaged from this domain, in its recv_index order). Fills send_start,
 * send_index and the reverse-sum lists. The plan's receive side must be set. An index outside
 * 0..n_local-1 fails with FNQ_STATUS_INVALID_ARG naming the peer, the request and the index; a
 * self request list (peer == rank) unlike this domain's own recv list fails too.
 */
enum fnq_status fnq_halo_plan_set_requests(struct fnq_halo_plan *plan, const int64_t *count_from,
                                           const int64_t *index_from);

/* Free every list and zero the plan (NULL-safe; a zeroed plan is fine). */
void fnq_halo_plan_free(struct fnq_halo_plan *plan);

#ifdef __cplusplus
}
#endif
