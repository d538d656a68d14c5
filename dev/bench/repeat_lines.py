"""repeat_lines.py SRC N OUT: the lines of SRC (gzip or text) repeated,
in order, to exactly N lines in OUT: the benches' inputs (multi_gpu.sh,
host_pipeline.sh) from Multi30k's training source."""
import gzip
import itertools
import sys

src, n, path = sys.argv[1], int(sys.argv[2]), sys.argv[3]
opener = gzip.open if src.endswith(".gz") else open
with opener(src, "rt", encoding="utf-8") as f:
    base = f.read().splitlines()
with open(path, "w", encoding="utf-8") as f:
    for line in itertools.islice(itertools.cycle(base), n):
        f.write(line + "\n")
