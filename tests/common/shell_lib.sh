# shell_lib.sh: sourced by the shell tests: strict mode (unset variables and
# failed pipes are errors; a failed command is not, the tests check codes),
# a temporary folder $TMP removed at exit, and fail() counting failures
# (end with: exit $((failures > 0))).
set -uo pipefail
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
failures=0
fail() { echo "FAIL: $*" >&2; failures=$((failures + 1)); }
