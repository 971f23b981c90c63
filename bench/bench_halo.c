/*
 * bench_halo.c: the ghost exchange alone (mpi/, fnq_mpi.h), without a model, to separate what
 * a transport costs from what the ranks wait for each other in an MD step. Each rank owns
 * --local rows and has --rows ghost rows from every other rank (synthetic routing, no cell);
 * each exchange moves --width float32 values per row, forward (owners -> ghosts) and reverse
 * (ghosts summed into owners), as one layer of the model does. Every exchange starts after an
 * MPI barrier with the stream idle, so the time is the transport's, not a peer's lateness.
 * One GPU per rank (rank % devices). Prints one JSON line (rank 0): medians in ms, GB/s out of
 * each GPU and per peer, and the phase split of a timed pass (fnq_halo_set_timing).
 *   mpirun -n 2 bench_halo --transport nccl [--rows 10000] [--width 704] [--local 64000]
 *                          [--reps 50]
 * The defaults are the weak-scaling box of 64,000 Si atoms per GPU on 2 GPUs (docs/multi-gpu.md:
 * ~10,300 rows of 704 values per exchange to the one peer).
 */
#include <cuda_runtime.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fnq_mpi.h"

struct options {
    enum fnq_halo_transport transport;
    int64_t rows, local;
    int32_t width, reps;
};

static const char usage_line[] =
    "usage: mpirun -n R bench_halo --transport nccl|ipc|staged [--rows N] [--width W] "
    "[--local N] [--reps N]\n";

static int usage(const char *why)
{
    fprintf(stderr, "bench_halo: %s\n%s", why, usage_line);
    return 2;
}

/* 0: run; 1: --help was asked (usage on stdout); 2: a bad argument (usage on stderr) */
static int parse(int argc, char **argv, struct options *o)
{
    *o = (struct options){FNQ_HALO_NCCL, 10000, 64000, 704, 50};
    for (int i = 1; i < argc; i++)
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            fputs(usage_line, stdout);
            return 1;
        }
    for (int i = 1; i + 1 < argc; i += 2) {
        const char *k = argv[i], *v = argv[i + 1];
        if (!strcmp(k, "--transport")) {
            if (!strcmp(v, "nccl"))
                o->transport = FNQ_HALO_NCCL;
            else if (!strcmp(v, "ipc"))
                o->transport = FNQ_HALO_IPC;
            else if (!strcmp(v, "staged"))
                o->transport = FNQ_HALO_STAGED;
            else
                return usage("unknown transport");
        } else if (!strcmp(k, "--rows"))
            o->rows = atoll(v);
        else if (!strcmp(k, "--width"))
            o->width = atoi(v);
        else if (!strcmp(k, "--local"))
            o->local = atoll(v);
        else if (!strcmp(k, "--reps"))
            o->reps = atoi(v);
        else
            return usage("unknown option");
    }
    if (argc % 2 == 0)
        return usage("an option without its value");
    if (o->rows < 1 || o->local < o->rows || o->width < 1 || o->reps < 1)
        return usage("--rows, --local, --width, --reps must be positive, rows <= local");
    return 0;
}

static int cmp_double(const void *a, const void *b)
{
    const double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* sorts v: v[0] is then the fastest */
static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof(double), cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

#define CHECK(cond, ...)                                                                        \
    do {                                                                                        \
        if (!(cond)) {                                                                          \
            fprintf(stderr, "bench_halo rank %d: ", rank);                                      \
            fprintf(stderr, __VA_ARGS__);                                                       \
            fprintf(stderr, "\n");                                                              \
            MPI_Abort(MPI_COMM_WORLD, 1);                                                       \
        }                                                                                       \
    } while (0)

/* seconds per exchange of each rep: every rank starts together with its stream idle; the
 * slowest rank's time counts (an exchange ends for all when it ends for the last) */
static void time_exchanges(const struct fnq_device_comm *dc, float *rows, int32_t width,
                           cudaStream_t stream, int reverse, int reps, double *seconds, int rank)
{
    for (int r = 0; r < reps; r++) {
        MPI_Barrier(MPI_COMM_WORLD);
        const double t0 = MPI_Wtime();
        const int rc = (reverse ? dc->reverse : dc->forward)(dc->user, rows, width,
                                                               FNQ_DTYPE_F32, stream);
        CHECK(rc == 0, "exchange failed: %s", fnq_last_error());
        CHECK(cudaStreamSynchronize(stream) == cudaSuccess, "stream failed");
        double dt = MPI_Wtime() - t0;
        MPI_Allreduce(MPI_IN_PLACE, &dt, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
        seconds[r] = dt;
    }
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank = 0, n_ranks = 1, devices = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &n_ranks);
    struct options o;
    const int parsed = parse(argc, argv, &o);
    if (parsed) {
        MPI_Finalize();
        return parsed == 1 ? 0 : 2;
    }
    CHECK(n_ranks > 1, "run it on 2 or more ranks (mpirun -n 2 ...)");
    CHECK(cudaGetDeviceCount(&devices) == cudaSuccess && devices > 0, "no CUDA device");
    const int device = rank % devices;
    CHECK(cudaSetDevice(device) == cudaSuccess, "cudaSetDevice(%d)", device);

    struct fnq_halo *halo = NULL;
    CHECK(fnq_halo_init(MPI_COMM_WORLD, o.transport, device, &halo) == FNQ_STATUS_OK, "%s",
          fnq_last_error());
    /* --rows ghosts from every other rank, images of owned rows spread over its --local */
    const int64_t n_ghosts = o.rows * (n_ranks - 1), n_all = o.local + n_ghosts;
    int32_t *ghost_rank = malloc(sizeof(int32_t) * (size_t)(n_ghosts + 1));
    int64_t *ghost_index = malloc(sizeof(int64_t) * (size_t)(n_ghosts + 1));
    CHECK(ghost_rank && ghost_index, "out of host memory");
    int64_t k = 0;
    for (int q = 0; q < n_ranks; q++)
        for (int64_t i = 0; q != rank && i < o.rows; i++, k++) {
            ghost_rank[k] = q;
            ghost_index[k] = i * o.local / o.rows;
        }
    const size_t row_bytes = sizeof(float) * (size_t)o.width;
    CHECK(fnq_halo_set_routing(halo, o.local, n_all, ghost_rank, ghost_index, row_bytes) ==
              FNQ_STATUS_OK, "%s", fnq_last_error());
    float *rows = NULL;
    cudaStream_t stream;
    CHECK(cudaMalloc((void **)&rows, row_bytes * (size_t)n_all) == cudaSuccess,
          "cudaMalloc of %.3g MB", row_bytes * (double)n_all / 1e6);
    CHECK(cudaMemset(rows, 0, row_bytes * (size_t)n_all) == cudaSuccess, "cudaMemset");
    CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking) == cudaSuccess, "stream");
    const struct fnq_device_comm dc = fnq_halo_device_comm(halo);

    double *fwd = malloc(sizeof(double) * (size_t)o.reps);
    double *bwd = malloc(sizeof(double) * (size_t)o.reps);
    CHECK(fwd && bwd, "out of host memory");
    double scratch[8]; /* passes whose times are not kept */
    time_exchanges(&dc, rows, o.width, stream, 0, 3, scratch, rank); /* warm-up: NCCL connects */
    time_exchanges(&dc, rows, o.width, stream, 1, 3, scratch, rank);
    struct fnq_halo_stats stats;
    fnq_halo_take_stats(halo, &stats);
    time_exchanges(&dc, rows, o.width, stream, 0, o.reps, fwd, rank);
    time_exchanges(&dc, rows, o.width, stream, 1, o.reps, bwd, rank);
    fnq_halo_take_stats(halo, &stats);
    /* one more pass with each phase drained and timed: where a forward exchange's time goes */
    fnq_halo_set_timing(halo, 1);
    time_exchanges(&dc, rows, o.width, stream, 0, 8, scratch, rank);
    struct fnq_halo_stats phases;
    fnq_halo_take_stats(halo, &phases);

    if (rank == 0) {
        struct cudaDeviceProp prop;
        cudaGetDeviceProperties(&prop, device);
        const double per_exchange = (double)stats.bytes_sent / (double)stats.exchanges;
        const double t_fwd = median(fwd, o.reps), t_bwd = median(bwd, o.reps);
        const char *channels = getenv("NCCL_MIN_P2P_NCHANNELS");
        printf("{\"bench\": \"halo\", \"device\": \"%s\", \"gpus\": %d, \"ranks\": %d, "
               "\"transport\": \"%s\", \"nccl_min_p2p_nchannels\": %s, \"rows_per_peer\": %lld, "
               "\"width\": %d, \"bytes_per_exchange\": %.0f, \"forward_ms\": %.4f, "
               "\"reverse_ms\": %.4f, \"forward_min_ms\": %.4f, \"gb_s_out\": %.1f, "
               "\"gb_s_per_peer\": %.1f, \"timed_pack_ms\": %.4f, \"timed_move_ms\": %.4f, "
               "\"timed_unpack_ms\": %.4f}\n",
               prop.name, devices < n_ranks ? devices : n_ranks, n_ranks,
               fnq_halo_transport_name(o.transport), channels ? channels : "null",
               (long long)o.rows, o.width, per_exchange, 1e3 * t_fwd, 1e3 * t_bwd, 1e3 * fwd[0],
               per_exchange / t_fwd / 1e9, per_exchange / (n_ranks - 1) / t_fwd / 1e9,
               1e3 * phases.t_pack / 8, 1e3 * phases.t_move / 8, 1e3 * phases.t_unpack / 8);
    }
    cudaFree(rows);
    cudaStreamDestroy(stream);
    free(fwd), free(bwd), free(ghost_rank), free(ghost_index);
    fnq_halo_free(halo);
    MPI_Finalize();
    return 0;
}
