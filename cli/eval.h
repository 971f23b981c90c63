/*
 * eval.h: `fusednequip eval`'s work on frames read from an extended XYZ file: each frame's
 * species from its element symbols, the library's evaluation (one frame a call, or a batch of
 * frames in one fnq_ctx_compute_batch), and one JSON line per frame.
 */
#pragma once

#include "fnq.h"
#include "xyz.h"

/* Evaluate frames[0..count-1] and print one line each, in order: batched, as one
 * fnq_ctx_compute_batch; else the one frame (count 1) through fnq_ctx_compute_periodic, its line
 * with the frame's edge count ("nedges"). Returns 0, or 2 after an error message naming the
 * file and the frame's line (nothing is printed for any frame of a batch that fails). */
int eval_frames(struct fnq_ctx *ctx, const struct fnq_model *m, const char *file,
                const struct xyz_frame *frames, int64_t count, int batched);
