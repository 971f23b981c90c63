/*
 * replay_main.c: a main() for the fuzz harnesses without libFuzzer, so that any build (GCC,
 * the sanitizer build of scripts/test-sanitize.sh) can run files through them: each argument
 * is a file, or a directory whose files are run in name order. Exit status 0 when every
 * input passed (a finding aborts); an input that runs longer than REPLAY_TIMEOUT seconds is a
 * hang and fails, as libFuzzer's -timeout does. CTest's fuzz_replay runs the seeds and
 * regressions this way.
 */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#define REPLAY_TIMEOUT 30

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char current[4096];

static void on_alarm(int sig)
{
    (void)sig;
    static const char a[] = "replay: FINDING: hang: more than 30 s on ";
    if (write(2, a, sizeof(a) - 1) < 0 || write(2, current, strlen(current)) < 0 ||
        write(2, "\n", 1) < 0) {
    }
    _exit(1);
}

static int run_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        perror(path);
        return 1;
    }
    size_t cap = 1 << 16, n = 0;
    uint8_t *buf = malloc(cap);
    size_t got;
    while (buf && (got = fread(buf + n, 1, cap - n, f)) > 0) {
        n += got;
        if (n == cap)
            buf = realloc(buf, cap *= 2);
    }
    fclose(f);
    if (!buf) {
        fprintf(stderr, "%s: out of memory\n", path);
        return 1;
    }
    /* an exact-size copy, so that AddressSanitizer sees reads past the input's end */
    uint8_t *exact = malloc(n ? n : 1);
    memcpy(exact, buf, n);
    free(buf);
    snprintf(current, sizeof(current), "%s", path);
    alarm(REPLAY_TIMEOUT);
    LLVMFuzzerTestOneInput(exact, n);
    alarm(0);
    free(exact);
    return 0;
}

static int cmp(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

int main(int argc, char **argv)
{
    signal(SIGALRM, on_alarm);
    int failures = 0, runs = 0;
    for (int i = 1; i < argc; i++) {
        struct stat st;
        if (stat(argv[i], &st) != 0) {
            perror(argv[i]);
            failures++;
            continue;
        }
        if (!S_ISDIR(st.st_mode)) {
            failures += run_file(argv[i]);
            runs++;
            continue;
        }
        DIR *d = opendir(argv[i]);
        char **names = NULL;
        size_t n = 0;
        struct dirent *e;
        while (d && (e = readdir(d)) != NULL) {
            if (e->d_name[0] == '.')
                continue;
            names = realloc(names, (n + 1) * sizeof(*names));
            names[n++] = strdup(e->d_name);
        }
        if (d)
            closedir(d);
        qsort(names, n, sizeof(*names), cmp);
        for (size_t k = 0; k < n; k++) {
            char path[4096];
            snprintf(path, sizeof(path), "%s/%s", argv[i], names[k]);
            if (stat(path, &st) == 0 && S_ISREG(st.st_mode)) {
                failures += run_file(path);
                runs++;
            }
            free(names[k]);
        }
        free(names);
    }
    printf("replayed %d inputs, %d unreadable\n", runs, failures);
    return failures ? 1 : 0;
}
