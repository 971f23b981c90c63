/*
 * xyz.c: extended XYZ reader (see xyz.h). Errors name the file and line.
 */
#include "xyz.h"

#include "fnq.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define LINE_CAP 65536
#define MAX_COLUMNS 512 /* per atom line */

static int read_line(FILE *f, char *buf, int64_t *line)
{
    if (!fgets(buf, LINE_CAP, f))
        return 0;
    (*line)++;
    size_t n = strlen(buf);
    while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == '\r'))
        buf[--n] = 0;
    return 1;
}

/* Next key=value pair of the comment line; values may be "quoted". */
static const char *next_pair(const char *p, char *key, size_t kcap, char *val, size_t vcap)
{
    while (isspace((unsigned char)*p))
        p++;
    if (!*p)
        return NULL;
    size_t k = 0;
    while (*p && *p != '=' && !isspace((unsigned char)*p)) {
        if (k + 1 < kcap) key[k++] = *p;
        p++;
    }
    key[k] = 0;
    size_t v = 0;
    val[0] = 0;
    if (*p == '=') {
        p++;
        char quote = (*p == '"' || *p == '\'') ? *p : 0;
        if (quote)
            p++;
        while (*p && (quote ? *p != quote : !isspace((unsigned char)*p))) {
            if (v + 1 < vcap) val[v++] = *p;
            p++;
        }
        if (quote && *p == quote)
            p++;
        val[v] = 0;
    }
    return p;
}

static int parse_bool(const char *s)
{
    return s[0] == 'T' || s[0] == 't' || s[0] == '1';
}

struct column {
    char name[64];
    char type;
    int count;
};

int xyz_read_frame(FILE *f, const char *name, int64_t *line, struct xyz_frame *fr, char *err,
                   size_t err_cap)
{
    memset(fr, 0, sizeof(*fr));
    char *buf = malloc(LINE_CAP);
    if (!buf) {
        snprintf(err, err_cap, "out of memory");
        return -1;
    }
    int rc = -1;
    /* count line (skip blank lines between frames) */
    for (;;) {
        if (!read_line(f, buf, line)) {
            rc = 0;
            goto done;
        }
        const char *p = buf;
        while (isspace((unsigned char)*p))
            p++;
        if (*p)
            break;
    }
    fr->first_line = *line;
    char *end;
    long long n = strtoll(buf, &end, 10);
    while (isspace((unsigned char)*end))
        end++;
    if (end == buf || *end || n < 0) {
        snprintf(err, err_cap, "%s:%lld: expected the number of atoms, found '%.40s'", name,
                 (long long)*line, buf);
        goto done;
    }
    fr->n_atoms = n;
    if (!read_line(f, buf, line)) {
        snprintf(err, err_cap, "%s:%lld: file ends before the comment line", name,
                 (long long)*line + 1);
        goto done;
    }
    /* comment line */
    struct column cols[32];
    int ncols = 0;
    int have_props = 0, have_pbc = 0;
    char key[256], val[4096];
    const char *p = buf;
    while ((p = next_pair(p, key, sizeof(key), val, sizeof(val))) != NULL) {
        if (strcasecmp(key, "Lattice") == 0) {
            double c[9];
            int got = sscanf(val, "%lf %lf %lf %lf %lf %lf %lf %lf %lf", &c[0], &c[1], &c[2],
                             &c[3], &c[4], &c[5], &c[6], &c[7], &c[8]);
            if (got != 9) {
                snprintf(err, err_cap, "%s:%lld: Lattice needs 9 numbers, found %d", name,
                         (long long)*line, got < 0 ? 0 : got);
                goto done;
            }
            memcpy(fr->cell, c, sizeof(c));
            fr->has_cell = 1;
        } else if (strcasecmp(key, "pbc") == 0) {
            char a[8], b[8], c[8];
            if (sscanf(val, "%7s %7s %7s", a, b, c) != 3) {
                snprintf(err, err_cap, "%s:%lld: pbc needs three values like \"T T F\"", name,
                         (long long)*line);
                goto done;
            }
            fr->pbc[0] = parse_bool(a), fr->pbc[1] = parse_bool(b), fr->pbc[2] = parse_bool(c);
            have_pbc = 1;
        } else if (strcasecmp(key, "Properties") == 0) {
            have_props = 1;
            char *q = val;
            while (*q) {
                if (ncols >= 32) {
                    snprintf(err, err_cap, "%s:%lld: too many Properties", name, (long long)*line);
                    goto done;
                }
                struct column *c = &cols[ncols];
                char type[8];
                int consumed = 0;
                if (sscanf(q, "%63[^:]:%7[^:]:%d%n", c->name, type, &c->count, &consumed) != 3 ||
                    c->count < 1) {
                    snprintf(err, err_cap,
                             "%s:%lld: cannot read Properties '%s' (expected name:type:count:...)",
                             name, (long long)*line, val);
                    goto done;
                }
                if (c->count > MAX_COLUMNS) {
                    snprintf(err, err_cap,
                             "%s:%lld: Properties column '%s' declares %d values per atom; at "
                             "most %d are supported",
                             name, (long long)*line, c->name, c->count, MAX_COLUMNS);
                    goto done;
                }
                c->type = type[0];
                ncols++;
                q += consumed;
                if (*q == ':')
                    q++;
            }
        }
    }
    if (!have_props) {
        ncols = 2;
        cols[0] = (struct column){"species", 'S', 1};
        cols[1] = (struct column){"pos", 'R', 3};
    }
    if (!have_pbc)
        fr->pbc[0] = fr->pbc[1] = fr->pbc[2] = fr->has_cell;
    int sp_col = -1, z_col = -1, pos_col = -1, width = 0, start[32];
    for (int c = 0; c < ncols; c++) {
        start[c] = width;
        width += cols[c].count;
        if (strcmp(cols[c].name, "species") == 0 && cols[c].type == 'S' && cols[c].count == 1)
            sp_col = c;
        else if (strcmp(cols[c].name, "Z") == 0 && cols[c].type == 'I' && cols[c].count == 1)
            z_col = c;
        else if (strcmp(cols[c].name, "pos") == 0 && cols[c].type == 'R' && cols[c].count == 3)
            pos_col = c;
    }
    if ((sp_col < 0 && z_col < 0) || pos_col < 0) {
        snprintf(err, err_cap,
                 "%s:%lld: Properties must include species:S:1 (or Z:I:1) and pos:R:3", name,
                 (long long)*line);
        goto done;
    }
    /* The count line is only a claim: the arrays grow with the atom lines actually read, so a
     * count that the file does not back with lines allocates nothing (truncated file below) */
    long long cap = 0;
    for (long long i = 0; i < n; i++) {
        if (i == cap) {
            cap = cap ? (cap < n / 2 ? 2 * cap : n) : (n < 1024 ? n : 1024);
            void *sym = realloc(fr->symbols, (size_t)cap * sizeof(*fr->symbols));
            if (sym)
                fr->symbols = sym;
            void *pos = realloc(fr->positions, (size_t)cap * 3 * sizeof(double));
            if (pos)
                fr->positions = pos;
            if (!sym || !pos) {
                snprintf(err, err_cap, "%s:%lld: out of memory for %lld atoms", name,
                         (long long)*line, cap);
                goto done;
            }
        }
        if (!read_line(f, buf, line)) {
            snprintf(err, err_cap, "%s:%lld: file ends after %lld of %lld atoms (truncated file)",
                     name, (long long)*line + 1, i, n);
            goto done;
        }
        char *tok[512];
        int nt = 0;
        for (char *t = strtok(buf, " \t"); t && nt < 512; t = strtok(NULL, " \t"))
            tok[nt++] = t;
        if (nt < width) {
            snprintf(err, err_cap, "%s:%lld: atom %lld has %d columns, Properties declare %d",
                     name, (long long)*line, i, nt, width);
            goto done;
        }
        if (sp_col >= 0) {
            snprintf(fr->symbols[i], sizeof(fr->symbols[i]), "%.3s", tok[start[sp_col]]);
        } else {
            char *e;
            long z = strtol(tok[start[z_col]], &e, 10);
            const char *sym = *e ? NULL : fnq_element_symbol((int32_t)z);
            if (!sym) {
                snprintf(err, err_cap, "%s:%lld: atom %lld: '%s' is not an atomic number", name,
                         (long long)*line, i, tok[start[z_col]]);
                goto done;
            }
            snprintf(fr->symbols[i], sizeof(fr->symbols[i]), "%s", sym);
        }
        for (int k = 0; k < 3; k++) {
            const char *t = tok[start[pos_col] + k];
            char *e;
            fr->positions[3 * i + k] = strtod(t, &e);
            if (e == t || *e) {
                snprintf(err, err_cap, "%s:%lld: atom %lld: coordinate '%s' is not a number",
                         name, (long long)*line, i, t);
                goto done;
            }
        }
    }
    if (n == 0) { /* an empty frame still has its (empty) arrays */
        fr->symbols = calloc(1, sizeof(*fr->symbols));
        fr->positions = calloc(3, sizeof(double));
        if (!fr->symbols || !fr->positions) {
            snprintf(err, err_cap, "out of memory");
            goto done;
        }
    }
    rc = 1;
done:
    free(buf);
    if (rc != 1)
        xyz_frame_free(fr);
    return rc;
}

void xyz_frame_free(struct xyz_frame *fr)
{
    free(fr->symbols);
    free(fr->positions);
    fr->symbols = NULL;
    fr->positions = NULL;
}
