/* shard.h: one MPI rank's part of a translate run (mpi.c, built when CMake
 * finds MPI). The input file's lines are split into `size` contiguous
 * shards; rank r translates lines [first, first + count) into its own part
 * file, and rank 0 joins the parts in rank order into the output. */
#ifndef NMT_TRANSLATE_SHARD_H
#define NMT_TRANSLATE_SHARD_H

typedef struct translate_shard {
    int rank, size;
    int local_rank;        /* this rank among the ranks of its host: its default GPU is
                              local_rank modulo the visible GPUs (translate.c) */
    long first, count;     /* 0-based first line, lines */
    char part_path[1100];  /* OUTPUT.part<rank> */
} translate_shard;

/* translate's main with a shard (NULL: the whole input). */
int translate_main(int argc, char **argv, const translate_shard *shard);

#endif /* NMT_TRANSLATE_SHARD_H */
