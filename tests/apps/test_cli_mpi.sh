#!/usr/bin/env bash
# translate --mpi under mpirun (CPU, one host; Open MPI): 1, 2 and 3 ranks give
# the one-process output byte for byte (each rank its contiguous shard, rank 0
# joining the parts in order, the parts removed); a rank whose only translator
# fails (injected) is named with its shard by rank 0 and every rank exits 4,
# without hanging;
# --mpi without -o is refused. Skips (77) without mpirun or an MPI build.
set -uo pipefail
: "${NMT_TRANSLATE:?}" "${NMT_TEST_MODEL:?}"
T=$NMT_TRANSLATE
M=$NMT_TEST_MODEL
command -v mpirun > /dev/null || { echo "no mpirun: skipped"; exit 77; }
"$T" --mpi -m "$M" 2>&1 | grep -q "this build has no MPI" && { echo "no MPI build: skipped"; exit 77; }
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
failures=0
fail() { echo "FAIL: $*" >&2; failures=$((failures + 1)); }
python3 -c "
import random
r = random.Random(4)
w = 'ein mann frau hund spielt im park Haus rot Ball . ! Zwei kind'.split()
print('\n'.join(' '.join(r.choice(w) for _ in range(r.randint(0, 10))) for _ in range(61)))" \
    > "$TMP/in.txt"
O=(--device cpu -b 2 --max-len-b 6 --batch-size 4)
"$T" -m "$M" "${O[@]}" -i "$TMP/in.txt" -o "$TMP/one.txt" 2> /dev/null
for np in 1 2 3; do
    timeout 300 mpirun -np $np "$T" --mpi -m "$M" "${O[@]}" -i "$TMP/in.txt" \
        -o "$TMP/mpi$np.txt" > "$TMP/mpi.out" 2>&1; code=$?
    [ $code -eq 0 ] || fail "-np $np: exit $code: $(tail -5 "$TMP/mpi.out")"
    cmp -s "$TMP/one.txt" "$TMP/mpi$np.txt" || fail "-np $np: output differs from one process's"
    ls "$TMP"/mpi$np.txt.part* > /dev/null 2>&1 && fail "-np $np: part files left behind"
done
# Rank 1's only translator fails (the library's NMT_TEST_TRANSLATOR_FAIL,
# set in that rank alone): nothing is left to take its windows.
# shellcheck disable=SC2016 # the wrapper's own variables, expanded when it runs
printf '#!/bin/sh\n[ "$OMPI_COMM_WORLD_RANK" = 1 ] && export NMT_TEST_TRANSLATOR_FAIL=0\nexec "$@"\n' \
    > "$TMP/fail-rank1.sh"
timeout 300 mpirun -np 3 sh "$TMP/fail-rank1.sh" "$T" --mpi -m "$M" "${O[@]}" \
    -i "$TMP/in.txt" -o "$TMP/fail.txt" > "$TMP/fail.out" 2>&1; code=$?
[ $code -ne 0 ] && [ $code -ne 124 ] || fail "a failing rank: exit $code (124: it hung)"
grep -q "rank 1 failed (exit 4) on its shard, lines 21-40" "$TMP/fail.out" ||
    fail "rank 0 does not name the failed rank and its shard: $(grep translate "$TMP/fail.out")"
[ -e "$TMP/fail.txt" ] && fail "a failed run wrote the joined output"
timeout 60 mpirun -np 2 "$T" --mpi -m "$M" -i "$TMP/in.txt" > "$TMP/usage.out" 2>&1; code=$?
[ $code -eq 2 ] && grep -q "needs -i FILE and -o FILE" "$TMP/usage.out" ||
    fail "--mpi without -o: exit $code"
exit $((failures > 0))
