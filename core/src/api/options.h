/*
 * options.h: the library's tuning and debugging switches. They come from the environment and
 * are read once, when a context is made (fnq_ctx_init), into this struct, which the context and
 * its backend keep: nothing reads the environment during an evaluation. docs/usage.md lists the
 * ones users set, docs/developers.md the switches for experiments; the defaults are what
 * production runs use.
 */
#pragma once

struct fnq_options {
    int host_graph;       /* FNQ_HOST_GRAPH=1: a caller's pairs become the graph on the host */
    int no_cuda_graph;    /* FNQ_NO_CUDA_GRAPH (set): launch kernels one by one, never record */
    int timing;           /* FNQ_TIMING=1: wall-clock per phase, printed when the context ends */
    int verbose;          /* FNQ_VERBOSE (set): kernel configuration and radial-table errors */
    int debug_layers;     /* FNQ_DEBUG_LAYERS (set): per-layer sums, on both backends */
    int radial_exact;     /* FNQ_RADIAL=exact: float32 runs the radial MLP, not its tables */
    int radial_intervals; /* FNQ_RADIAL_INTERVALS: knots of the radial tables (default 2048) */
    int tf32;             /* FNQ_TF32=1: the radial-MLP GEMMs on tensor cores (3xTF32) */
    int sh_generic;       /* FNQ_SH_GENERIC=1: harmonics by the runtime recursion at any degree */
    int no_quads;         /* FNQ_NO_QUADS=1: node linears one output element per thread */
    int no_groups;        /* FNQ_NO_GROUPS=1: every tensor-product path alone */
    int ec_fwd, ec_bwd;   /* FNQ_EC_FWD / FNQ_EC_BWD: edges per super-chunk (0: automatic) */
    int skip;             /* FNQ_SKIP: stages left out, for timing only (results WRONG) */
    int lean_memory;      /* FNQ_LEAN_MEMORY=1: the GPU's lean buffer layout from the start */
    int node_gemm;        /* GPU node-wise work as GEMMs over all atoms (node_gemm.cuh) or in
                           * the layer kernels' epilogues: FNQ_NODE_GEMM=0 never, 1 always,
                           * else -1: by the atom count (cuda_run.cu, uses_node_gemm) */
    int atoms_per_block;  /* FNQ_ATOMS_PER_BLOCK=1|2|4: the GPU layer kernels' atoms per block
                           * in table mode (0: by the atom count, cuda_run.cu) */
    int cpu_pair_mb;      /* FNQ_CPU_PAIR_MB: MB for the CPU's stored radial weights (2048) */
    int tp_generic;       /* FNQ_TP_GENERIC=1: CPU tensor products by the generic kernels only
                           * (not those generated per path kind), to compare */
    int allegro_chunk;    /* FNQ_ALLEGRO_CHUNK: edges per chunk of the GPU's Allegro engine (0:
                           * as many as 8 GB or half the free memory holds) */
    int allegro_cublas;   /* FNQ_ALLEGRO_GEMM=cublas: the Allegro engine's float32 GEMMs by
                           * cuBLAS on Hopper too (not gemm_3xtf32), to compare */
};

/* The switches as the environment sets them now. */
void fnq__options_read(struct fnq_options *o);
