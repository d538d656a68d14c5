/* mpi.c: translate's main in a build with MPI (shard.h).
 *
 *   mpirun -np N translate --mpi -m MODEL -i big.txt -o out.txt [options]
 *
 * Rank 0 counts the input's lines and broadcasts the count; rank r
 * translates its contiguous shard (translate_main with the shard: the same
 * reading, translating and checked writing as one process, its own GPUs
 * with --devices) into out.txt.part<r>. Every rank's exit status is
 * gathered on rank 0: when all succeeded (0, or 1 for refused lines) rank 0
 * joins the parts in rank order into out.txt and removes them; when a rank
 * failed, rank 0 names it and its shard (lines, part file) and the run exits
 * 4 on every rank, so mpirun never waits on a rank that has given up. On
 * CUDA a rank given neither --devices nor --device-index takes
 * the GPU of its rank among its host's ranks (modulo the visible GPUs), so
 * one rank a GPU needs no wrapper. Without
 * --mpi the program is translate as usual, even under mpirun. */
#include "options.h"
#include "shard.h"

#include <errno.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Lines of path (a last line without a newline counts); -1 when unreadable. */
static long count_lines(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return -1;
    char buf[1 << 16];
    long lines = 0;
    size_t n;
    int last = '\n';
    while ((n = fread(buf, 1, sizeof buf, f)) > 0) {
        for (size_t i = 0; i < n; i++)
            lines += buf[i] == '\n';
        last = buf[n - 1];
    }
    const int bad = ferror(f);
    fclose(f);
    if (bad)
        return -1;
    return lines + (last != '\n');
}

/* Appends path to out; 0, or -1 with errno. */
static int append_file(FILE *out, const char *path)
{
    FILE *in = fopen(path, "rb");
    if (!in)
        return -1;
    char buf[1 << 16];
    size_t n;
    int bad = 0;
    while (!bad && (n = fread(buf, 1, sizeof buf, in)) > 0)
        bad = fwrite(buf, 1, n, out) != n;
    bad |= ferror(in);
    fclose(in);
    return bad ? -1 : 0;
}

/* Rank 0: the parts in rank order into the output; the parts removed. */
static int join_parts(const translate_args *args, int size)
{
    FILE *out = fopen(args->output_path, "wb");
    if (!out) {
        fprintf(stderr, "translate: -o %s: cannot open: %s\n", args->output_path,
                strerror(errno));
        return EXIT_IO;
    }
    char part[1100];
    for (int r = 0; r < size; r++) {
        snprintf(part, sizeof part, "%s.part%d", args->output_path, r);
        if (append_file(out, part) != 0) {
            fprintf(stderr, "translate: joining %s into %s: %s\n", part, args->output_path,
                    strerror(errno ? errno : EIO));
            fclose(out);
            return EXIT_IO;
        }
    }
    if (fclose(out) != 0) {
        fprintf(stderr, "translate: error writing %s: %s\n", args->output_path, strerror(errno));
        return EXIT_IO;
    }
    for (int r = 0; r < size; r++) { /* the output is complete: a part left is only clutter */
        snprintf(part, sizeof part, "%s.part%d", args->output_path, r);
        if (remove(part) != 0)
            fprintf(stderr, "translate: warning: cannot remove %s: %s\n", part, strerror(errno));
    }
    return EXIT_OK;
}

int main(int argc, char **argv)
{
    translate_args args;
    char message[1024];
    int mpi = 0;
    for (int i = 1; i < argc; i++)
        mpi |= !strcmp(argv[i], "--mpi");
    if (!mpi) /* a config file's mpi = 1 is refused by translate_main */
        return translate_main(argc, argv, NULL);
    if (translate_args_parse(argc, argv, &args, message, sizeof message) != EXIT_OK) {
        fprintf(stderr, "translate: %s\n", message);
        return EXIT_USAGE;
    }
    MPI_Init(&argc, &argv);
    translate_shard shard = {0};
    MPI_Comm_rank(MPI_COMM_WORLD, &shard.rank);
    MPI_Comm_size(MPI_COMM_WORLD, &shard.size);
    /* The ranks that share this host, for a GPU each (translate.c). */
    MPI_Comm host;
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, shard.rank, MPI_INFO_NULL, &host);
    MPI_Comm_rank(host, &shard.local_rank);
    MPI_Comm_free(&host);
    long total = -1;
    int usage = !args.input_path[0] || !args.output_path[0] || args.stats_path[0] ||
                args.skip_lines > 0;
    if (shard.rank == 0 && usage)
        fprintf(stderr, "translate: --mpi needs -i FILE and -o FILE, and takes no --stats, "
                        "--timing or --skip-lines\n");
    if (shard.rank == 0 && !usage && (total = count_lines(args.input_path)) < 0)
        fprintf(stderr, "translate: -i %s: cannot read: %s\n", args.input_path, strerror(errno));
    MPI_Bcast(&total, 1, MPI_LONG, 0, MPI_COMM_WORLD);
    int code;
    if (total < 0) {
        code = EXIT_USAGE;
    } else {
        shard.first = total * shard.rank / shard.size;
        shard.count = total * (shard.rank + 1) / shard.size - shard.first;
        snprintf(shard.part_path, sizeof shard.part_path, "%s.part%d", args.output_path,
                 shard.rank);
        code = translate_main(argc, argv, &shard);
    }
    /* Every rank's status on rank 0, which joins or reports; then one exit
     * status for all. */
    int *codes = shard.rank == 0 ? calloc((size_t)shard.size, sizeof *codes) : NULL;
    MPI_Gather(&code, 1, MPI_INT, codes, 1, MPI_INT, 0, MPI_COMM_WORLD);
    int final = code;
    if (shard.rank == 0 && total >= 0) {
        final = EXIT_OK;
        for (int r = 0; r < shard.size; r++) {
            if (codes[r] == EXIT_OK || codes[r] == EXIT_BAD_LINES) {
                final = final == EXIT_OK ? codes[r] : final;
                continue;
            }
            const long first = total * r / shard.size, last = total * (r + 1) / shard.size;
            fprintf(stderr, "translate: rank %d failed (exit %d) on its shard, lines %ld-%ld; "
                            "its output so far is %s.part%d\n",
                    r, codes[r], first + 1, last, args.output_path, r);
            final = EXIT_FAILED;
        }
        if (final == EXIT_OK || final == EXIT_BAD_LINES) {
            const int joined = join_parts(&args, shard.size);
            if (joined != EXIT_OK)
                final = joined;
        }
    }
    MPI_Bcast(&final, 1, MPI_INT, 0, MPI_COMM_WORLD);
    free(codes);
    MPI_Finalize();
    return final;
}
