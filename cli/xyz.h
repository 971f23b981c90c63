/*
 * xyz.h: a reader for extended XYZ files as ASE writes them: a count line, a comment line of
 * key=value pairs (Lattice="...", Properties=species:S:1:pos:R:3:..., pbc="T T T"), then one
 * line per atom. Plain XYZ (no key=value pairs) reads as a non-periodic structure.
 */
#pragma once

#include <stdint.h>
#include <stdio.h>

struct xyz_frame {
    int64_t n_atoms;
    char (*symbols)[4]; /* [n_atoms] */
    double *positions;  /* [n_atoms*3] */
    int has_cell;
    double cell[9];     /* rows = lattice vectors */
    int32_t pbc[3];
    int64_t first_line; /* line number of the count line, for messages */
};

/* Read the next frame. Returns 1 on success, 0 at end of file, -1 on error (message in err). */
int xyz_read_frame(FILE *f, const char *name, int64_t *line, struct xyz_frame *frame, char *err,
                   size_t err_cap);
void xyz_frame_free(struct xyz_frame *frame);
