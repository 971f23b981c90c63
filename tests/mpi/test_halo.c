/*
 * test_halo.c: the library's own ghost exchange (mpi/halo_plan, mpi/halo_rows) on N domains in
 * one process: one pthread per domain, messages through memory (mailboxes + a barrier), the
 * plan's pack / unpack / reverse sum run inside each domain context's fnq_comm callbacks.
 * Domains are slabs of a periodic diamond Si cell small enough that an atom has several images
 * in one domain's ghost shell, periodic images of the domain's own atoms included.
 *
 * Checked without a model: the lists of a small hand-made plan; routing (every ghost row holds
 * its owner's encoded row; the reverse sum counts every image); the adjoint identity
 * <F x, y> == <x, R y> of the forward and reverse exchanges; bad input named in the message.
 * With nequix-mp-1 (exit 77 without it, after the checks above): N = 1..4 slabs along x, one
 * skewed decomposition, a decomposition with an empty domain and a larger cell against the
 * single-domain fnq_ctx_compute_periodic: energy, per-atom energies, forces (ghost force rows
 * added to their owners) and virial within 1e-12 relative in float64, 1e-5 in float32, and
 * bitwise equal over two runs; also with each domain folding the periodic images of its own
 * atoms onto them (ghost_owner, those ghosts FNQ_HALO_NO_ROW in the plan), as LAMMPS ranks do. Run with OMP_NUM_THREADS=1 (the threads are the domains).
 * With `--device cuda` (label gpu) the model checks run on the GPU against the GPU's single
 * domain: the rows are the device rows of fnq_ctx_set_device_comm, copied to the host for the
 * in-memory transport and back (exit 77 without a GPU). `--one-case` runs one model case only
 * (for the sanitizers).
 */
#include <pthread.h>
#ifdef FNQ_TEST_CUDA
#include <cuda_runtime.h>
#endif

#include "fnq_test.h"
#include "halo_plan.h"
#include "halo_rows.h"

#define SKIN 1.0

/* ---------------- decomposition into domains ---------------- */

/* One domain as a LAMMPS rank sees it: owned atoms, then ghosts, and a full pair list (with a
 * skin) from owned receivers. */
struct domain {
    int32_t rank;
    int64_t n_local, n_all;
    int64_t *global;       /* [n_local]: the global atom each owned atom is */
    double *pos;           /* [n_all*3] */
    int32_t *species;      /* [n_all] */
    int64_t *ghost_global; /* [n_ghosts]: global atom each ghost images */
    int32_t *ghost_rank;   /* [n_ghosts]: the domain owning it */
    int64_t *ghost_index;  /* [n_ghosts]: its local index there */
    int64_t *ghost_owner;  /* [n_ghosts]: that index where the domain is this one, else -1 */
    int64_t n_edges, *recv, *send;
};

struct decomposition {
    int32_t n;
    struct domain *dom;
    int64_t n_global;
};

enum slab_axis { SLAB_X, SLAB_XY /* planes normal to (1,1,0): a skewed direction */ };

/* Orthorhombic cells only: fractional coordinate along `axis` wrapped into [0, 1). */
static int32_t slab_of(const struct test_structure *s, int64_t j, enum slab_axis axis, int32_t n)
{
    double t = s->pos[3 * j] / s->cell[0];
    if (axis == SLAB_XY)
        t += s->pos[3 * j + 1] / s->cell[4];
    t -= floor(t);
    const int32_t d = (int32_t)(t * n);
    return d < n ? d : n - 1;
}

static double dist2(const double *a, const double *b)
{
    double d2 = 0.0;
    for (int k = 0; k < 3; k++)
        d2 += (a[k] - b[k]) * (a[k] - b[k]);
    return d2;
}

/* Ghosts of domain d: every image (atom j, shift) within reach of an owned atom, except the
 * domain's own atoms at zero shift; ordered by shift then atom, as a cell list might. */
static void build_domain(const struct test_structure *s, const int32_t *owner_rank,
                         const int64_t *owner_index, int32_t d, double reach, struct domain *D)
{
    const int64_t n = s->n;
    const int K = 2;
    memset(D, 0, sizeof(*D));
    D->rank = d;
    for (int64_t j = 0; j < n; j++)
        D->n_local += owner_rank[j] == d;
    const int64_t cap = D->n_local + n * (2 * K + 1) * (2 * K + 1) * (2 * K + 1);
    D->global = malloc(sizeof(int64_t) * (size_t)(D->n_local + 1));
    D->pos = malloc(sizeof(double) * 3 * (size_t)cap);
    D->species = malloc(sizeof(int32_t) * (size_t)cap);
    D->ghost_global = malloc(sizeof(int64_t) * (size_t)cap);
    D->ghost_rank = malloc(sizeof(int32_t) * (size_t)cap);
    D->ghost_index = malloc(sizeof(int64_t) * (size_t)cap);
    D->ghost_owner = malloc(sizeof(int64_t) * (size_t)cap);
    int64_t na = 0;
    for (int64_t j = 0; j < n; j++)
        if (owner_rank[j] == d) {
            D->global[na] = j;
            memcpy(D->pos + 3 * na, s->pos + 3 * j, sizeof(double) * 3);
            D->species[na++] = s->species[j];
        }
    for (int a = -K; a <= K; a++)
        for (int b = -K; b <= K; b++)
            for (int c = -K; c <= K; c++)
                for (int64_t j = 0; j < n; j++) {
                    if (!a && !b && !c && owner_rank[j] == d)
                        continue;
                    double x[3];
                    for (int k = 0; k < 3; k++)
                        x[k] = s->pos[3 * j + k] + a * s->cell[k] + b * s->cell[3 + k] +
                               c * s->cell[6 + k];
                    int keep = 0;
                    for (int64_t i = 0; i < D->n_local && !keep; i++)
                        keep = dist2(x, D->pos + 3 * i) < reach * reach;
                    if (!keep)
                        continue;
                    const int64_t g = na - D->n_local;
                    memcpy(D->pos + 3 * na, x, sizeof(x));
                    D->species[na] = s->species[j];
                    D->ghost_global[g] = j;
                    D->ghost_rank[g] = owner_rank[j];
                    D->ghost_index[g] = owner_index[j];
                    D->ghost_owner[g] = owner_rank[j] == d ? owner_index[j] : -1;
                    na++;
                }
    D->n_all = na;
    D->recv = malloc(sizeof(int64_t) * (size_t)(D->n_local * na + 1));
    D->send = malloc(sizeof(int64_t) * (size_t)(D->n_local * na + 1));
    for (int64_t i = 0; i < D->n_local; i++)
        for (int64_t a = 0; a < na; a++)
            if (a != i && dist2(D->pos + 3 * a, D->pos + 3 * i) < reach * reach) {
                D->recv[D->n_edges] = i;
                D->send[D->n_edges++] = a;
            }
}

static void decompose(const struct test_structure *s, int32_t n, enum slab_axis axis,
                      double reach, struct decomposition *dc)
{
    int32_t *owner_rank = malloc(sizeof(int32_t) * (size_t)s->n);
    int64_t *owner_index = malloc(sizeof(int64_t) * (size_t)s->n);
    int64_t *count = calloc((size_t)n, sizeof(int64_t));
    for (int64_t j = 0; j < s->n; j++) {
        owner_rank[j] = slab_of(s, j, axis, n);
        owner_index[j] = count[owner_rank[j]]++; /* owned atoms in global order */
    }
    dc->n = n;
    dc->n_global = s->n;
    dc->dom = calloc((size_t)n, sizeof(struct domain));
    for (int32_t d = 0; d < n; d++)
        build_domain(s, owner_rank, owner_index, d, reach, &dc->dom[d]);
    free(owner_rank), free(owner_index), free(count);
}

static void decomposition_free(struct decomposition *dc)
{
    for (int32_t d = 0; d < dc->n; d++) {
        struct domain *D = &dc->dom[d];
        free(D->global), free(D->pos), free(D->species), free(D->ghost_global);
        free(D->ghost_rank), free(D->ghost_index), free(D->ghost_owner);
        free(D->recv), free(D->send);
    }
    free(dc->dom);
}

/* ---------------- the in-memory transport ---------------- */

/* Mailboxes: each domain posts where its outgoing parts are; after a barrier every domain
 * copies its part out of every other's; a second barrier keeps the posted buffers alive until
 * all have read. One round of concurrent messages, as an MPI_Alltoallv. */
struct net {
    int32_t n;
    pthread_barrier_t barrier;
    struct posting {
        const void *buf;
        const int64_t *start; /* [n+1]: part for domain p is slots start[p] .. start[p+1] */
    } *post;
};

static void net_wait(struct net *net)
{
    int rc = pthread_barrier_wait(&net->barrier);
    if (rc != 0 && rc != PTHREAD_BARRIER_SERIAL_THREAD) {
        fprintf(stderr, "FAIL: pthread_barrier_wait: %d\n", rc);
        exit(1);
    }
}

/* Domain `rank` receives into recv slots recv_start[p] .. what domain p posted for it. */
static void net_alltoallv(struct net *net, int32_t rank, const void *send,
                          const int64_t *send_start, void *recv, const int64_t *recv_start,
                          size_t slot_bytes)
{
    net->post[rank] = (struct posting){send, send_start};
    net_wait(net);
    for (int32_t p = 0; p < net->n; p++) {
        const struct posting *q = &net->post[p];
        const int64_t n_sent = q->start[rank + 1] - q->start[rank];
        const int64_t n_expected = recv_start[p + 1] - recv_start[p];
        if (n_sent != n_expected) { /* a plan bug: the others would wait forever */
            fprintf(stderr, "FAIL: domain %d expects %lld rows from domain %d, which sends %lld\n",
                    rank, (long long)n_expected, p, (long long)n_sent);
            exit(1);
        }
        if (n_sent > 0)
            memcpy((char *)recv + (size_t)recv_start[p] * slot_bytes,
                   (const char *)q->buf + (size_t)q->start[rank] * slot_bytes,
                   (size_t)n_sent * slot_bytes);
    }
    net_wait(net);
}

/* Each domain asks each owner for the rows its ghosts image (the plan's request_index, by
 * peer), the owners set their send side from what arrives. Folded own images ask for none. */
static void net_build_plan(struct net *net, const struct domain *D, int fold,
                           struct fnq_halo_plan *plan)
{
    const int32_t n = net->n, r = D->rank;
    const int64_t n_ghosts = D->n_all - D->n_local;
    int32_t *ghost_rank = malloc(sizeof(int32_t) * (size_t)(n_ghosts + 1));
    for (int64_t g = 0; g < n_ghosts; g++)
        ghost_rank[g] = fold && D->ghost_owner[g] >= 0 ? FNQ_HALO_NO_ROW : D->ghost_rank[g];
    CHECK_OK(fnq_halo_plan_set_ghosts(plan, n, r, D->n_local, D->n_all, ghost_rank,
                                      D->ghost_index));
    free(ghost_rank);
    net->post[r] = (struct posting){NULL, plan->recv_start};
    net_wait(net);
    int64_t *count_from = malloc(sizeof(int64_t) * (size_t)n);
    int64_t *from_start = calloc((size_t)n + 1, sizeof(int64_t));
    for (int32_t p = 0; p < n; p++) {
        count_from[p] = net->post[p].start[r + 1] - net->post[p].start[r];
        from_start[p + 1] = from_start[p] + count_from[p];
    }
    net_wait(net);
    int64_t *index_from = malloc(sizeof(int64_t) * (size_t)(from_start[n] + 1));
    net_alltoallv(net, r, plan->request_index, plan->recv_start, index_from, from_start,
                  sizeof(int64_t));
    CHECK_OK(fnq_halo_plan_set_requests(plan, count_from, index_from));
    free(count_from), free(from_start), free(index_from);
}

/* ---------------- one domain's thread ---------------- */

enum task { TASK_ROUTING, TASK_ADJOINT, TASK_MODEL };

struct run {
    struct net *net;
    const struct domain *D;
    struct fnq_halo_plan plan;
    enum task task;
    int fold; /* the domain folds its own periodic images (model task) */
    char *buf[2]; /* message buffers (send, recv), grown as needed */
    size_t cap[2];
    int calls;
    /* routing */
    int64_t mismatches;
    double *image_count; /* [n_local]: the reverse sum of ones over the ghost images */
    /* adjoint: owned rows of x and ghost rows of y come in; F x (ghost rows) and R y (owned
     * rows) go out, width ADJ_WIDTH */
    double *x, *y;
    /* model */
    const struct fnq_model *model;
    enum fnq_dtype dtype;
    double energy, virial[6], *atom_energies, *forces;
};

static void *grow(struct run *R, int which, size_t bytes)
{
    if (bytes > R->cap[which]) {
        free(R->buf[which]);
        R->buf[which] = malloc(bytes);
        R->cap[which] = bytes;
    }
    return R->buf[which];
}

static int comm_forward(void *user, void *rows, int32_t width, enum fnq_dtype dtype)
{
    struct run *R = user;
    const size_t slot = (size_t)width * (size_t)fnq_halo_value_bytes(dtype);
    void *send = grow(R, 0, slot * (size_t)fnq_halo_plan_n_send(&R->plan) + 1);
    void *recv = grow(R, 1, slot * (size_t)fnq_halo_plan_n_recv(&R->plan) + 1);
    if (fnq_halo_pack_forward(&R->plan, rows, width, dtype, send) != FNQ_STATUS_OK)
        return 1;
    net_alltoallv(R->net, R->D->rank, send, R->plan.send_start, recv, R->plan.recv_start, slot);
    R->calls++;
    return fnq_halo_unpack_forward(&R->plan, recv, width, dtype, rows) != FNQ_STATUS_OK;
}

static int comm_reverse(void *user, void *rows, int32_t width, enum fnq_dtype dtype)
{
    struct run *R = user;
    const size_t slot = (size_t)width * (size_t)fnq_halo_value_bytes(dtype);
    void *send = grow(R, 0, slot * (size_t)fnq_halo_plan_n_recv(&R->plan) + 1);
    void *recv = grow(R, 1, slot * (size_t)fnq_halo_plan_n_send(&R->plan) + 1);
    if (fnq_halo_pack_reverse(&R->plan, rows, width, dtype, send) != FNQ_STATUS_OK)
        return 1;
    net_alltoallv(R->net, R->D->rank, send, R->plan.recv_start, recv, R->plan.send_start, slot);
    R->calls++;
    return fnq_halo_sum_reverse(&R->plan, recv, width, dtype, rows) != FNQ_STATUS_OK;
}

#ifdef FNQ_TEST_CUDA
/* The device comm: the rows of all atoms to the host, the host exchange, and back. What is
 * checked is the core's device entry (rows on the GPU, on its stream); mpi/'s kernels and
 * transports have their own tests under LAMMPS. Both copies go on the context's stream and are
 * waited for: that stream does not wait for the legacy default stream, and a plain cudaMemcpy
 * from pageable memory may return before the rows are on the GPU, so the next kernels could
 * read old rows (the one failure seen, under a concurrent GPU test: float64 forces off by 0.44
 * and two runs differing, fits that). */
static int device_rows(void *user, void *rows, int32_t width, enum fnq_dtype dtype, void *stream,
                       int (*host_exchange)(void *, void *, int32_t, enum fnq_dtype))
{
    struct run *R = user;
    cudaStream_t st = (cudaStream_t)stream;
    const size_t bytes = (size_t)R->D->n_all * (size_t)width * (size_t)fnq_halo_value_bytes(dtype);
    void *host = malloc(bytes + 1);
    int rc = cudaMemcpyAsync(host, rows, bytes, cudaMemcpyDeviceToHost, st) != cudaSuccess ||
             cudaStreamSynchronize(st) != cudaSuccess;
    rc = rc || host_exchange(user, host, width, dtype);
    rc = rc || cudaMemcpyAsync(rows, host, bytes, cudaMemcpyHostToDevice, st) != cudaSuccess ||
         cudaStreamSynchronize(st) != cudaSuccess;
    free(host);
    return rc;
}

static int device_forward(void *user, void *rows, int32_t width, enum fnq_dtype dtype, void *stream)
{
    return device_rows(user, rows, width, dtype, stream, comm_forward);
}

static int device_reverse(void *user, void *rows, int32_t width, enum fnq_dtype dtype, void *stream)
{
    return device_rows(user, rows, width, dtype, stream, comm_reverse);
}
#endif

static enum fnq_device model_device = FNQ_DEVICE_CPU; /* --device cuda: the GPU */

#define ROUTE_WIDTH 3
#define ADJ_WIDTH 5

static double encode(int32_t rank, int64_t atom, int col) { return rank * 1e6 + atom * 100.0 + col; }

/* Forward rows that say where they come from; every ghost must hold its owner's. Then the
 * reverse sum of ones: each owned row counts its images over all domains. */
#define ROUTING_CHECK(REAL, DTYPE)                                                              \
    do {                                                                                       \
        REAL *rows = malloc(sizeof(REAL) * ROUTE_WIDTH * (size_t)(D->n_all + 1));              \
        for (int64_t a = 0; a < D->n_all; a++)                                                 \
            for (int c = 0; c < ROUTE_WIDTH; c++)                                              \
                rows[a * ROUTE_WIDTH + c] = a < D->n_local ? (REAL)encode(D->rank, a, c) : -1; \
        if (comm_forward(R, rows, ROUTE_WIDTH, DTYPE))                                         \
            exit(1);                                                                           \
        for (int64_t k = 0; k < D->n_all - D->n_local; k++)                                    \
            for (int c = 0; c < ROUTE_WIDTH; c++) {                                            \
                const double got = rows[(D->n_local + k) * ROUTE_WIDTH + c];                   \
                const double want = encode(D->ghost_rank[k], D->ghost_index[k], c);            \
                if (got != want && R->mismatches++ < 10)                                       \
                    fprintf(stderr,                                                            \
                            "FAIL routing (%s): domain %d, ghost atom %lld (image of global "  \
                            "atom %lld), column %d: expected owner domain %d atom %lld, got "  \
                            "domain %.0f atom %.0f column %.0f\n",                             \
                            #REAL, D->rank, (long long)(D->n_local + k),                       \
                            (long long)D->ghost_global[k], c, D->ghost_rank[k],                \
                            (long long)D->ghost_index[k], floor(got / 1e6),                    \
                            floor(fmod(got, 1e6) / 100), fmod(got, 100));                      \
            }                                                                                  \
        for (int64_t a = 0; a < D->n_all; a++)                                                 \
            rows[a] = a < D->n_local ? 0 : 1;                                                  \
        if (comm_reverse(R, rows, 1, DTYPE))                                                   \
            exit(1);                                                                           \
        for (int64_t a = 0; a < D->n_local; a++)                                               \
            R->image_count[a] = rows[a];                                                       \
        free(rows);                                                                            \
    } while (0)

static void task_routing(struct run *R)
{
    const struct domain *D = R->D;
    ROUTING_CHECK(double, FNQ_DTYPE_F64);
    ROUTING_CHECK(float, FNQ_DTYPE_F32);
}

/* x: owned rows in, ghost rows = F x out; y: ghost rows in, owned rows = R y out */
static void task_adjoint(struct run *R)
{
    const int64_t nl = R->D->n_local, na = R->D->n_all;
    for (int64_t a = nl; a < na; a++)
        for (int c = 0; c < ADJ_WIDTH; c++)
            R->x[a * ADJ_WIDTH + c] = 0.0;
    for (int64_t a = 0; a < nl; a++)
        for (int c = 0; c < ADJ_WIDTH; c++)
            R->y[a * ADJ_WIDTH + c] = 0.0;
    if (comm_forward(R, R->x, ADJ_WIDTH, FNQ_DTYPE_F64) ||
        comm_reverse(R, R->y, ADJ_WIDTH, FNQ_DTYPE_F64))
        exit(1);
}

static void task_model(struct run *R)
{
    const struct domain *D = R->D;
    struct fnq_ctx *ctx;
    CHECK_OK(fnq_ctx_init(R->model, model_device, 0, R->dtype, &ctx));
    if (model_device == FNQ_DEVICE_CPU) {
        const struct fnq_comm comm = {R, comm_forward, comm_reverse};
        CHECK_OK(fnq_ctx_set_comm(ctx, &comm));
    } else {
#ifdef FNQ_TEST_CUDA
        const struct fnq_device_comm comm = {R, device_forward, device_reverse, NULL};
        CHECK_OK(fnq_ctx_set_device_comm(ctx, &comm));
#endif
    }
    CHECK_OK(fnq_ctx_compute_graph(ctx, D->n_local, D->n_all, D->pos, D->species, D->n_edges,
                                   D->recv, D->send, NULL, R->fold ? D->ghost_owner : NULL,
                                   &R->energy, R->atom_energies, R->forces, R->virial, NULL));
    fnq_ctx_free(ctx);
}

static void *domain_main(void *arg)
{
    struct run *R = arg;
    net_build_plan(R->net, R->D, R->fold, &R->plan);
    switch (R->task) {
    case TASK_ROUTING: task_routing(R); break;
    case TASK_ADJOINT: task_adjoint(R); break;
    case TASK_MODEL: task_model(R); break;
    }
    return NULL;
}

/* Runs every domain's thread to the end; runs[d] set up by the caller except net, D, plan. */
static void run_domains(const struct decomposition *dc, struct run *runs)
{
    struct net net = {.n = dc->n, .post = calloc((size_t)dc->n, sizeof(struct posting))};
    pthread_barrier_init(&net.barrier, NULL, (unsigned)dc->n);
    pthread_t *threads = malloc(sizeof(pthread_t) * (size_t)dc->n);
    for (int32_t d = 0; d < dc->n; d++) {
        runs[d].net = &net;
        runs[d].D = &dc->dom[d];
        memset(&runs[d].plan, 0, sizeof(runs[d].plan));
        if (pthread_create(&threads[d], NULL, domain_main, &runs[d]) != 0) {
            fprintf(stderr, "FAIL: pthread_create\n");
            exit(1);
        }
    }
    for (int32_t d = 0; d < dc->n; d++)
        pthread_join(threads[d], NULL);
    pthread_barrier_destroy(&net.barrier);
    free(threads), free(net.post);
    for (int32_t d = 0; d < dc->n; d++) {
        fnq_halo_plan_free(&runs[d].plan);
        free(runs[d].buf[0]), free(runs[d].buf[1]);
        runs[d].buf[0] = runs[d].buf[1] = NULL;
        runs[d].cap[0] = runs[d].cap[1] = 0;
    }
}

static void describe(const char *label, const struct decomposition *dc)
{
    printf("%s:", label);
    for (int32_t d = 0; d < dc->n; d++)
        printf(" [%lld owned, %lld ghosts, %lld pairs]", (long long)dc->dom[d].n_local,
               (long long)(dc->dom[d].n_all - dc->dom[d].n_local), (long long)dc->dom[d].n_edges);
    printf("\n");
}

/* ---------------- checks without a model ---------------- */

static void check_small_plan(void)
{
    /* rank 0 of 2 owns 3 atoms; ghosts 3, 4, 5 image (rank 1, 0), (rank 0, 2), (rank 1, 1) */
    const int32_t ghost_rank[3] = {1, 0, 1};
    const int64_t ghost_index[3] = {0, 2, 1};
    struct fnq_halo_plan plan = {0};
    CHECK_OK(fnq_halo_plan_set_ghosts(&plan, 2, 0, 3, 6, ghost_rank, ghost_index));
    const int64_t recv_start[3] = {0, 1, 3}, recv_index[3] = {4, 3, 5}, request[3] = {2, 0, 1};
    CHECK(!memcmp(plan.recv_start, recv_start, sizeof(recv_start)) &&
              !memcmp(plan.recv_index, recv_index, sizeof(recv_index)) &&
              !memcmp(plan.request_index, request, sizeof(request)),
          "small plan: receive lists differ");
    /* itself: its own image of atom 2; rank 1 asks for atoms 2 and 0 */
    const int64_t count_from[2] = {1, 2}, index_from[3] = {2, 2, 0};
    CHECK_OK(fnq_halo_plan_set_requests(&plan, count_from, index_from));
    const int64_t send_start[3] = {0, 1, 3}, send_index[3] = {2, 2, 0};
    const int64_t sum_atom[2] = {0, 2}, sum_start[3] = {0, 1, 3}, sum_slot[3] = {2, 0, 1};
    CHECK(!memcmp(plan.send_start, send_start, sizeof(send_start)) &&
              !memcmp(plan.send_index, send_index, sizeof(send_index)),
          "small plan: send lists differ");
    CHECK(plan.n_sum == 2 && !memcmp(plan.sum_atom, sum_atom, sizeof(sum_atom)) &&
              !memcmp(plan.sum_start, sum_start, sizeof(sum_start)) &&
              !memcmp(plan.sum_slot, sum_slot, sizeof(sum_slot)),
          "small plan: reverse-sum lists differ");
    /* the reverse sum adds in the plan's order: atom 2 gets slot 0 then slot 1 */
    double rows[6] = {1, 0, 10, 0, 0, 0}, recv[3] = {100, 1000, 10000};
    fnq_halo_sum_reverse_f64(&plan, recv, 1, rows);
    CHECK(rows[0] == 10001 && rows[1] == 0 && rows[2] == 1110, "small plan: reverse sum %g %g %g",
          rows[0], rows[1], rows[2]);
    /* the own image (ghost 4) folded by the caller: no row, nothing asked of itself */
    const int32_t folded_rank[3] = {1, FNQ_HALO_NO_ROW, 1};
    CHECK_OK(fnq_halo_plan_set_ghosts(&plan, 2, 0, 3, 6, folded_rank, ghost_index));
    const int64_t folded_start[3] = {0, 0, 2}, folded_index[2] = {3, 5}, folded_req[2] = {0, 1};
    CHECK(!memcmp(plan.recv_start, folded_start, sizeof(folded_start)) &&
              !memcmp(plan.recv_index, folded_index, sizeof(folded_index)) &&
              !memcmp(plan.request_index, folded_req, sizeof(folded_req)),
          "small plan, own image folded: receive lists differ");
    fnq_halo_plan_free(&plan);
}

static void expect_failure(enum fnq_status st, const char *what, const char *needle1,
                           const char *needle2)
{
    const char *msg = fnq_last_error();
    printf("bad input (%s): %s\n", what, msg);
    CHECK(st == FNQ_STATUS_INVALID_ARG && strstr(msg, needle1) && strstr(msg, needle2),
          "%s: expected a failure naming \"%s\" and \"%s\", got status %d: %s", what, needle1,
          needle2, (int)st, msg);
}

static void check_bad_input(void)
{
    struct fnq_halo_plan plan = {0};
    int32_t ghost_rank[3] = {1, 0, 1};
    int64_t ghost_index[3] = {0, 2, 1};
    ghost_rank[1] = 2; /* ghost atom 4: owner rank 2 of 2 ranks */
    expect_failure(fnq_halo_plan_set_ghosts(&plan, 2, 0, 3, 6, ghost_rank, ghost_index),
                   "owner rank out of range", "ghost atom 4", "owner rank 2");
    ghost_rank[1] = -2; /* -1 is FNQ_HALO_NO_ROW */
    expect_failure(fnq_halo_plan_set_ghosts(&plan, 2, 0, 3, 6, ghost_rank, ghost_index),
                   "negative owner rank", "ghost atom 4", "owner rank -2");
    ghost_rank[1] = 0, ghost_index[1] = 3; /* an own atom that does not exist */
    expect_failure(fnq_halo_plan_set_ghosts(&plan, 2, 0, 3, 6, ghost_rank, ghost_index),
                   "image of a missing own atom", "ghost atom 4", "own atom 3");
    ghost_index[1] = 2, ghost_index[2] = -5;
    expect_failure(fnq_halo_plan_set_ghosts(&plan, 2, 0, 3, 6, ghost_rank, ghost_index),
                   "negative index", "ghost atom 5", "atom -5");
    /* a peer's ghost names an atom beyond this rank's: only the owner can tell */
    ghost_index[2] = 1;
    CHECK_OK(fnq_halo_plan_set_ghosts(&plan, 2, 0, 3, 6, ghost_rank, ghost_index));
    const int64_t count_from[2] = {1, 2}, index_from[3] = {2, 0, 7};
    expect_failure(fnq_halo_plan_set_requests(&plan, count_from, index_from),
                   "peer asks for a missing atom", "peer 1 asks rank 0 for atom 7",
                   "ghost request 1");
    const int64_t wrong_self[3] = {1, 0, 1};
    expect_failure(fnq_halo_plan_set_requests(&plan, count_from, wrong_self),
                   "self requests unlike own ghosts", "rank 0's requests to itself", "1 rows");
    fnq_halo_plan_free(&plan);
}

static void check_routing(const struct decomposition *dc, const char *label)
{
    struct run *runs = calloc((size_t)dc->n, sizeof(struct run));
    for (int32_t d = 0; d < dc->n; d++) {
        runs[d].task = TASK_ROUTING;
        runs[d].image_count = calloc((size_t)dc->dom[d].n_local + 1, sizeof(double));
    }
    run_domains(dc, runs);
    /* images of each global atom over all domains' ghost shells */
    double *want = calloc((size_t)dc->n_global, sizeof(double));
    for (int32_t d = 0; d < dc->n; d++)
        for (int64_t k = 0; k < dc->dom[d].n_all - dc->dom[d].n_local; k++)
            want[dc->dom[d].ghost_global[k]] += 1;
    int64_t mismatches = 0, bad_counts = 0, ghosts = 0;
    for (int32_t d = 0; d < dc->n; d++) {
        const struct domain *D = &dc->dom[d];
        mismatches += runs[d].mismatches;
        ghosts += D->n_all - D->n_local;
        for (int64_t a = 0; a < D->n_local; a++)
            if (runs[d].image_count[a] != want[D->global[a]] && bad_counts++ < 10)
                fprintf(stderr,
                        "FAIL reverse routing: domain %d atom %lld (global %lld) summed %g "
                        "images, expected %g\n",
                        d, (long long)a, (long long)D->global[a], runs[d].image_count[a],
                        want[D->global[a]]);
        free(runs[d].image_count);
    }
    printf("routing %s: %lld ghost rows, %lld wrong rows (float64 and float32), %lld wrong "
           "image counts\n",
           label, (long long)ghosts, (long long)mismatches, (long long)bad_counts);
    CHECK(mismatches == 0 && bad_counts == 0, "routing %s: %lld wrong ghost rows, %lld wrong image counts", label,
          (long long)mismatches, (long long)bad_counts);
    free(want), free(runs);
}

static void check_adjoint(const struct decomposition *dc, const char *label)
{
    struct run *runs = calloc((size_t)dc->n, sizeof(struct run));
    for (int32_t d = 0; d < dc->n; d++) {
        const int64_t rows = (dc->dom[d].n_all + 1) * ADJ_WIDTH;
        runs[d].task = TASK_ADJOINT;
        runs[d].x = malloc(sizeof(double) * (size_t)rows);
        runs[d].y = malloc(sizeof(double) * (size_t)rows);
        for (int64_t v = 0; v < rows; v++) {
            runs[d].x[v] = 2.0 * test_rand() - 1.0;
            runs[d].y[v] = 2.0 * test_rand() - 1.0;
        }
    }
    /* keep the inputs: the exchange overwrites x's ghost rows and y's owned rows */
    double **x0 = malloc(sizeof(double *) * (size_t)dc->n), **y0 = malloc(sizeof(double *) * (size_t)dc->n);
    for (int32_t d = 0; d < dc->n; d++) {
        const size_t bytes = sizeof(double) * (size_t)((dc->dom[d].n_all + 1) * ADJ_WIDTH);
        x0[d] = malloc(bytes), y0[d] = malloc(bytes);
        memcpy(x0[d], runs[d].x, bytes), memcpy(y0[d], runs[d].y, bytes);
    }
    run_domains(dc, runs);
    double fxy = 0.0, xry = 0.0, scale = 0.0;
    for (int32_t d = 0; d < dc->n; d++) {
        const int64_t nl = dc->dom[d].n_local, na = dc->dom[d].n_all;
        for (int64_t v = nl * ADJ_WIDTH; v < na * ADJ_WIDTH; v++) {
            fxy += runs[d].x[v] * y0[d][v];
            scale += fabs(runs[d].x[v] * y0[d][v]);
        }
        for (int64_t v = 0; v < nl * ADJ_WIDTH; v++)
            xry += x0[d][v] * runs[d].y[v];
        free(runs[d].x), free(runs[d].y), free(x0[d]), free(y0[d]);
    }
    const double rel = fabs(fxy - xry) / fmax(scale, 1e-300);
    printf("adjoint %s: <F x, y> = %.17g, <x, R y> = %.17g, difference %.2e relative\n", label,
           fxy, xry, rel);
    CHECK(rel <= 1e-12 && scale > 0, "adjoint %s: <F x, y> - <x, R y> = %.3e relative", label, rel);
    free(x0), free(y0), free(runs);
}

/* Routing and adjoint on the geometry of the model tests (nequix-mp-1's cutoff of 6 A + the
 * skin), species all 0: test_diamond needs the model to name Si */
static void check_exchange_without_model(void)
{
    static const double basis[8][3] = {{0, 0, 0},          {0, 0.5, 0.5},      {0.5, 0, 0.5},
                                       {0.5, 0.5, 0},      {0.25, 0.25, 0.25}, {0.25, 0.75, 0.75},
                                       {0.75, 0.25, 0.75}, {0.75, 0.75, 0.25}};
    const double a = 5.43;
    struct test_structure s;
    memset(&s, 0, sizeof(s));
    s.n = 64; /* 2x2x2 cells */
    s.pos = malloc(sizeof(double) * 3 * 64);
    s.species = calloc(64, sizeof(int32_t));
    for (int64_t k = 0; k < 64; k++)
        for (int d = 0; d < 3; d++)
            s.pos[3 * k + d] = a * (((k / 8) >> (2 - d) & 1) + basis[k % 8][d]) +
                               0.1 * (test_rand() - 0.5);
    s.cell[0] = s.cell[4] = s.cell[8] = 2 * a;
    s.pbc[0] = s.pbc[1] = s.pbc[2] = 1;
    s.has_cell = 1;
    for (int32_t n = 1; n <= 4; n++)
        for (int axis = SLAB_X; axis <= SLAB_XY; axis++) {
            char label[64];
            snprintf(label, sizeof(label), "%d domain(s) along %s", n,
                     axis == SLAB_X ? "x" : "(1,1,0)");
            struct decomposition dc;
            decompose(&s, n, (enum slab_axis)axis, 6.0 + SKIN, &dc);
            check_routing(&dc, label);
            if (n >= 2)
                check_adjoint(&dc, label);
            decomposition_free(&dc);
        }
    test_structure_free(&s);
}

/* ---------------- against the single-domain model ---------------- */

struct result {
    double energy, virial[6], *atom_energies, *forces; /* global atoms */
};

static void result_alloc(struct result *r, int64_t n)
{
    memset(r, 0, sizeof(*r));
    r->atom_energies = calloc((size_t)n, sizeof(double));
    r->forces = calloc((size_t)n * 3, sizeof(double));
}

static void result_free(struct result *r) { free(r->atom_energies), free(r->forces); }

static void reference(const struct fnq_model *m, const struct test_structure *s,
                      enum fnq_dtype dtype, struct result *r)
{
    struct fnq_ctx *ctx;
    result_alloc(r, s->n);
    CHECK_OK(fnq_ctx_init(m, model_device, 0, dtype, &ctx));
    CHECK_OK(fnq_ctx_compute_periodic(ctx, s->n, s->pos, s->species, s->cell, s->pbc, &r->energy,
                                      r->atom_energies, r->forces, r->virial));
    fnq_ctx_free(ctx);
}

/* Every domain evaluates its part; results summed in domain order (ghost force rows onto the
 * global atoms they image), as LAMMPS' reverse communication of forces would. */
static void run_model(const struct fnq_model *m, const struct decomposition *dc,
                      enum fnq_dtype dtype, int fold, struct result *r)
{
    struct run *runs = calloc((size_t)dc->n, sizeof(struct run));
    for (int32_t d = 0; d < dc->n; d++) {
        runs[d].task = TASK_MODEL;
        runs[d].fold = fold;
        runs[d].model = m;
        runs[d].dtype = dtype;
        runs[d].atom_energies = calloc((size_t)dc->dom[d].n_local + 1, sizeof(double));
        runs[d].forces = calloc(3 * (size_t)dc->dom[d].n_all + 1, sizeof(double));
    }
    run_domains(dc, runs);
    result_alloc(r, dc->n_global);
    const int expected_calls = 2 * (fnq_model_num_layers(m) - 1);
    for (int32_t d = 0; d < dc->n; d++) {
        const struct domain *D = &dc->dom[d];
        CHECK(runs[d].calls == expected_calls, "domain %d: %d exchanges, expected %d", d,
              runs[d].calls, expected_calls);
        r->energy += runs[d].energy;
        for (int k = 0; k < 6; k++)
            r->virial[k] += runs[d].virial[k];
        for (int64_t a = 0; a < D->n_all; a++) {
            const int64_t j = a < D->n_local ? D->global[a] : D->ghost_global[a - D->n_local];
            if (a < D->n_local)
                r->atom_energies[j] = runs[d].atom_energies[a];
            for (int k = 0; k < 3; k++)
                r->forces[3 * j + k] += runs[d].forces[3 * a + k];
        }
        free(runs[d].atom_energies), free(runs[d].forces);
    }
    free(runs);
}

static double max_rel(const double *got, const double *want, int64_t n)
{
    double dev = 0.0, big = 0.0;
    for (int64_t i = 0; i < n; i++) {
        dev = fmax(dev, fabs(got[i] - want[i]));
        big = fmax(big, fabs(want[i]));
    }
    return dev / fmax(big, 1e-300);
}

static int same_bits(const struct result *a, const struct result *b, int64_t n)
{
    return !memcmp(&a->energy, &b->energy, sizeof(double)) &&
           !memcmp(a->virial, b->virial, sizeof(a->virial)) &&
           !memcmp(a->atom_energies, b->atom_energies, sizeof(double) * (size_t)n) &&
           !memcmp(a->forces, b->forces, sizeof(double) * 3 * (size_t)n);
}

static double worst_seen[2]; /* float32, float64: the largest deviation of any quantity */

static void compare(const char *label, const struct result *got, const struct result *want,
                    int64_t n, enum fnq_dtype dtype)
{
    const double tol = dtype == FNQ_DTYPE_F64 ? 1e-12 : 1e-5;
    const double de = fabs(got->energy - want->energy) / fabs(want->energy);
    const double da = max_rel(got->atom_energies, want->atom_energies, n);
    const double df = max_rel(got->forces, want->forces, 3 * n);
    const double dv = max_rel(got->virial, want->virial, 6);
    printf("  %-44s %s: dE %.2e, de_i %.2e, dF %.2e, dW %.2e (relative)\n", label,
           fnq_dtype_name(dtype), de, da, df, dv);
    const double worst = fmax(fmax(de, da), fmax(df, dv));
    worst_seen[dtype == FNQ_DTYPE_F64] = fmax(worst_seen[dtype == FNQ_DTYPE_F64], worst);
    CHECK(worst <= tol, "%s %s: deviation %.3e from the single domain (bar %.0e)", label,
          fnq_dtype_name(dtype), worst, tol);
}

/* N domains against one; float64 (twice when `repeat`: bitwise equal), float32 when asked;
 * fold: each domain folds its own periodic images */
static void check_model(const struct fnq_model *m, const struct test_structure *s,
                        const struct result *ref64, const struct result *ref32, int32_t n,
                        enum slab_axis axis, int repeat, int fold, const char *what)
{
    char label[128];
    snprintf(label, sizeof(label), "%d domain(s), %s%s", n, what, fold ? ", own images folded" : "");
    struct decomposition dc;
    decompose(s, n, axis, fnq_model_cutoff(m) + SKIN, &dc);
    describe(label, &dc);
    struct result r1, r2;
    run_model(m, &dc, FNQ_DTYPE_F64, fold, &r1);
    compare(label, &r1, ref64, s->n, FNQ_DTYPE_F64);
    if (repeat) {
        run_model(m, &dc, FNQ_DTYPE_F64, fold, &r2);
        const int same = same_bits(&r1, &r2, s->n);
        printf("  %-44s float64: second run bitwise %s\n", label, same ? "equal" : "DIFFERENT");
        CHECK(same, "%s: two runs differ", label);
        result_free(&r2);
    }
    result_free(&r1);
    if (ref32) {
        run_model(m, &dc, FNQ_DTYPE_F32, fold, &r1);
        compare(label, &r1, ref32, s->n, FNQ_DTYPE_F32);
        result_free(&r1);
    }
    decomposition_free(&dc);
}

/* `--one-case`: 2 slabs of the 64-atom cell in float32, ghosts exchanged (no fold), against the
 * single domain: the GHOST-mode backward pass and the exchange callbacks once, small enough for
 * compute-sanitizer racecheck (~50x slower), which does not finish the full list in 10 minutes */
static void check_one_case(const struct fnq_model *m)
{
    struct test_structure s;
    struct result ref32, got;
    test_diamond(&s, m, 2, 0.1);
    reference(m, &s, FNQ_DTYPE_F32, &ref32);
    struct decomposition dc;
    decompose(&s, 2, SLAB_X, fnq_model_cutoff(m) + SKIN, &dc);
    describe("2 domain(s), slabs along x", &dc);
    run_model(m, &dc, FNQ_DTYPE_F32, 0, &got);
    compare("2 domain(s), slabs along x", &got, &ref32, s.n, FNQ_DTYPE_F32);
    result_free(&got), result_free(&ref32);
    decomposition_free(&dc);
    test_structure_free(&s);
}

int main(int argc, char **argv)
{
    int one_case = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--one-case")) {
            one_case = 1;
        } else if (!strcmp(argv[i], "--device") && i + 1 < argc && !strcmp(argv[i + 1], "cuda")) {
            i++;
#ifdef FNQ_TEST_CUDA
            test_require_gpu();
            model_device = FNQ_DEVICE_CUDA;
#else
            printf("SKIP: built without CUDA\n");
            return 77;
#endif
        } else {
            fprintf(stderr, "usage: %s [--device cuda] [--one-case]\n", argv[0]);
            return 2;
        }
    }
    printf("domains on %s\n", fnq_device_name(model_device));
    /* ---- the plan and the exchange, no model ---- */
    check_small_plan();
    check_bad_input();
    check_exchange_without_model();
    if (fnq_test_failures)
        return test_finish("mpi_halo (without a model)");

    /* ---- with the model: N domains against one ---- */
    char path[4096];
    if (fnq_model_find("nequix-mp-1", path, sizeof(path)) != FNQ_STATUS_OK) {
        printf("routing, adjoint and bad-input checks passed; SKIP the model checks: %s\n",
               fnq_last_error());
        return 77;
    }
    struct fnq_model *m = test_load_model("nequix-mp-1");
    printf("nequix-mp-1: cutoff %g A, %d layers, skin %g A\n", fnq_model_cutoff(m),
           fnq_model_num_layers(m), SKIN);
    if (one_case) {
        check_one_case(m);
        fnq_model_free(m);
        return test_finish("mpi_halo (one case)");
    }

    struct test_structure s;
    struct result ref64, ref32;
    test_diamond(&s, m, 2, 0.1); /* 64 atoms, box 10.86 A < 2 (cutoff + skin) */
    reference(m, &s, FNQ_DTYPE_F64, &ref64);
    reference(m, &s, FNQ_DTYPE_F32, &ref32);
    printf("diamond Si, 64 atoms, box %.2f A: E = %.10f eV\n", s.cell[0], ref64.energy);
    for (int32_t n = 1; n <= 4; n++)
        check_model(m, &s, &ref64, n % 2 == 0 ? &ref32 : NULL, n, SLAB_X, 1, 0, "slabs along x");
    check_model(m, &s, &ref64, &ref32, 3, SLAB_XY, 1, 0, "slabs along (1,1,0)");
    for (int32_t n = 2; n <= 4; n += 2)
        check_model(m, &s, &ref64, &ref32, n, SLAB_X, 1, 1, "slabs along x");
    check_model(m, &s, &ref64, NULL, 3, SLAB_XY, 0, 1, "slabs along (1,1,0)");
    result_free(&ref64), result_free(&ref32);
    test_structure_free(&s);

    /* a Si slab in a longer box: the last of 4 slabs along x is vacuum, its domain owns no atom
     * (and has no ghosts) but takes part in every exchange */
    test_diamond(&s, m, 2, 0.1);
    s.cell[0] = 4.0 / 3.0 * 10.86;
    for (int64_t i = 0; i < s.n; i++)
        s.pos[3 * i] += 0.5;
    reference(m, &s, FNQ_DTYPE_F64, &ref64);
    printf("Si slab with vacuum, 64 atoms, box %.2f A along x: E = %.10f eV\n", s.cell[0],
           ref64.energy);
    check_model(m, &s, &ref64, NULL, 4, SLAB_X, 1, 0, "one empty (vacuum)");
    check_model(m, &s, &ref64, NULL, 4, SLAB_X, 0, 1, "one empty (vacuum)");
    result_free(&ref64);
    test_structure_free(&s);

    /* a larger cell: 216 atoms (one run: the repeats above cover reproducibility) */
    test_diamond(&s, m, 3, 0.1);
    reference(m, &s, FNQ_DTYPE_F64, &ref64);
    printf("diamond Si, 216 atoms, box %.2f A: E = %.10f eV\n", s.cell[0], ref64.energy);
    check_model(m, &s, &ref64, NULL, 4, SLAB_X, 0, 0, "slabs along x, 216 atoms");
    result_free(&ref64);
    test_structure_free(&s);

    printf("largest deviation from one domain: float64 %.2e, float32 %.2e (relative)\n",
           worst_seen[1], worst_seen[0]);
    fnq_model_free(m);
    return test_finish("mpi_halo");
}
