# shell_lib.sh: sourced by the shell tests: strict mode (unset variables and
# failed pipes are errors; a failed command is not, the tests check codes),
# a temporary folder $TMP removed at exit, and fail() counting failures
# (end with: exit $((failures > 0))).
set -uo pipefail
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
failures=0
fail() { echo "FAIL: $*" >&2; failures=$((failures + 1)); }
# random_lines FILE SEED LINES MAX_TOKENS BAD "WORDS": LINES lines of 0 to
# MAX_TOKENS words drawn from WORDS (seeded), with BAD invalid-UTF-8 lines
# ("\xff bad") after the first BAD lines: inputs some of whose lines are refused.
random_lines() {
    python3 - "$@" <<'PY'
import random, sys
path, seed, n, most, bad, words = sys.argv[1:7]
r = random.Random(int(seed))
w = words.split()
lines = [" ".join(r.choice(w) for _ in range(r.randint(0, int(most)))) for _ in range(int(n))]
out = "\n".join(lines).encode() + b"\n"
out = out.replace(b"\n", b"\n\xff bad\n", int(bad))
open(path, "wb").write(out)
PY
}
