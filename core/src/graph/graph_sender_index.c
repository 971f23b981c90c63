/*
 * graph_sender_index.c: the graph's by-sender index, edge ids grouped by sender and ascending
 * within each (a stable counting sort by sender), on every OpenMP thread. Two stable levels:
 * each block of edges sends its ids, in order, into FNQ_GRAPH_BLOCKS buckets of consecutive
 * senders; then each bucket is counting-sorted on its own. The index is the one a single
 * thread's counting sort makes, whatever the number of threads.
 */
#include <string.h>

#include "graph/graph.h"

/* the bucket of sender j of n */
static inline int bucket_of(int64_t j, int64_t n) { return (int)(j * FNQ_GRAPH_BLOCKS / n); }

/* the first sender of bucket u (ceil(u n / blocks)) */
static inline int64_t bucket_first(int u, int64_t n)
{
    return ((int64_t)u * n + FNQ_GRAPH_BLOCKS - 1) / FNQ_GRAPH_BLOCKS;
}

void fnq__graph_sender_index(struct fnq_graph_buf *b)
{
    const int64_t ne = b->g.n_edges, na = b->g.n_all;
    const int64_t *send = b->edge_send;
    b->send_start[0] = 0;
    if (na == 0)
        return;
    /* edges of block t in bucket u, then where they start in edge_tmp (bucket-major) */
    int64_t at[FNQ_GRAPH_BLOCKS][FNQ_GRAPH_BLOCKS];
#pragma omp parallel for schedule(static)
    for (int t = 0; t < FNQ_GRAPH_BLOCKS; t++) {
        memset(at[t], 0, sizeof(at[t]));
        for (int64_t e = fnq__graph_block_start(ne, t); e < fnq__graph_block_start(ne, t + 1); e++)
            at[t][bucket_of(send[e], na)]++;
    }
    int64_t bucket_start[FNQ_GRAPH_BLOCKS + 1];
    int64_t q = 0;
    for (int u = 0; u < FNQ_GRAPH_BLOCKS; u++) {
        bucket_start[u] = q;
        for (int t = 0; t < FNQ_GRAPH_BLOCKS; t++) {
            const int64_t count = at[t][u];
            at[t][u] = q;
            q += count;
        }
    }
    bucket_start[FNQ_GRAPH_BLOCKS] = q;
#pragma omp parallel for schedule(static)
    for (int t = 0; t < FNQ_GRAPH_BLOCKS; t++)
        for (int64_t e = fnq__graph_block_start(ne, t); e < fnq__graph_block_start(ne, t + 1); e++)
            b->edge_tmp[at[t][bucket_of(send[e], na)]++] = e;
    /* each bucket's senders: count, their starts, then the ids in bucket (= edge) order */
    int64_t *next = b->scratch;
#pragma omp parallel for schedule(dynamic)
    for (int u = 0; u < FNQ_GRAPH_BLOCKS; u++) {
        const int64_t j0 = bucket_first(u, na), j1 = bucket_first(u + 1, na);
        for (int64_t j = j0; j < j1; j++)
            next[j] = 0;
        for (int64_t k = bucket_start[u]; k < bucket_start[u + 1]; k++)
            next[send[b->edge_tmp[k]]]++;
        int64_t start = bucket_start[u];
        for (int64_t j = j0; j < j1; j++) {
            const int64_t count = next[j];
            b->send_start[j] = next[j] = start;
            start += count;
        }
        for (int64_t k = bucket_start[u]; k < bucket_start[u + 1]; k++) {
            const int64_t e = b->edge_tmp[k];
            b->send_edges[next[send[e]]++] = e;
        }
    }
    b->send_start[na] = ne;
}
