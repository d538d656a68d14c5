#!/usr/bin/env bash
# The newcomer's path (README: scripts/demo.sh, then scripts/run-tests.sh),
# checked without building or installing anything: the scripts run from a
# copy of scripts/ and models/demo.de, on a PATH where every command
# scripts/deps.sh checks for is a stub (apt-get, sudo, id, cmake and ctest
# record their calls), so each case chooses what is missing and who runs it.
#  - nothing missing: no apt-get is run, nothing is said;
#  - a build package missing, not root and no password-less sudo: demo.sh
#    stops (exit 1) and prints the one `sudo apt-get install` line; as root,
#    or with `sudo -n`, it runs apt-get update and install itself;
#  - a test package missing: run-tests.sh names the tests that skip, prints
#    the line, and goes on; NMT_DEPS_INSTALL=no never runs apt-get;
#  - demo.sh and run-tests.sh configure the same build directory with the
#    same build type (so the second command does not rebuild everything);
#  - demo.sh always runs the (incremental) build, so an edited source never
#    leaves a stale binary running;
#  - the README: the two commands, each once, demo first; its by-hand
#    install line is exactly scripts/deps.sh's packages; no link outside the
#    repository, every relative link resolving.
set -uo pipefail
unset BUILD CC CXX NMT_DEPS_INSTALL CMAKE_PREFIX_PATH
SRC=${NMT_SOURCE_DIR:-$(cd "$(dirname "$0")/../.." && pwd)}
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
failures=0
fail() { echo "FAIL: $*" >&2; failures=$((failures + 1)); }

repo=$TMP/repo
mkdir -p "$repo/scripts" "$repo/models" "$TMP/sys"
cp "$SRC/scripts/demo.sh" "$SRC/scripts/run-tests.sh" "$SRC/scripts/deps.sh" "$repo/scripts/"
printf 'Ein Hund.\n' > "$repo/models/demo.de"
LOG=$TMP/calls.log
# The system's commands, but none that a check or the scripts' installing uses.
stubbed="cmake ctest make cc c++ pkg-config mpirun mpicc spm_train valgrind chromium chromedriver python3 apt-get sudo id"
IFS=: read -ra path_dirs <<< "$PATH"
for dir in "${path_dirs[@]}"; do
    for exe in "$dir"/*; do
        name=${exe##*/}
        [ -x "$exe" ] && [[ " $stubbed " != *" $name "* ]] && [ ! -e "$TMP/sys/$name" ] &&
            ln -s "$exe" "$TMP/sys/$name"
    done
done

# stubs MISSING...: a folder of stubs for every command in $stubbed but the
# MISSING ones; "pc:NAME" makes pkg-config lack NAME, "py:NAME" Python lack
# the module NAME. cmake --build leaves a translate stub that prints its
# arguments (the demo's translation). Prints the folder.
stubs() {
    local bin missing=" $* " name
    bin=$(mktemp -d "$TMP/bin.XXXX")
    for name in $stubbed; do
        [[ $missing == *" $name "* ]] && continue
        printf '#!/bin/bash\necho "%s $*" >> "%s"\n' "$name" "$LOG" > "$bin/$name"
    done
    [ -e "$bin/cmake" ] && cat >> "$bin/cmake" <<'EOF2'
if [ "$1" = --build ]; then
    printf '#!/bin/sh\necho "translate $*"\n' > "$2/translate"
    chmod +x "$2/translate"
elif [ "$1" = -S ]; then
    mkdir -p "$4"
fi
EOF2
    for name in $missing; do
        case $name in
        pc:*) echo "[ \"\$2\" = ${name#pc:} ] && exit 1" >> "$bin/pkg-config" ;;
        py:*) echo "[[ \"\$2\" == *\"'${name#py:}'\"* ]] && exit 1" >> "$bin/python3" ;;
        esac
    done
    echo 'exit 0' | tee -a "$bin/pkg-config" >> "$bin/python3"
    echo 'echo "${FAKE_UID:-1000}"' >> "$bin/id"
    echo '[ "${FAKE_SUDO:-}" = ok ] || exit 1; [ "$1" = -n ] && shift; [ "$1" = true ] || "$@"' >> "$bin/sudo"
    chmod +x "$bin"/*
    echo "$bin"
}
# run BIN SCRIPT [ARGS]: runs a script of the copy on BIN's stubs and the
# system's other commands; stdout to out, stderr to err, the code in $code.
run() {
    local bin=$1 script=$2
    shift 2
    : > "$LOG"
    PATH=$bin:$TMP/sys NMT_PYTHON=$bin/python3 bash "$repo/scripts/$script" "$@" \
        > "$TMP/out" 2> "$TMP/err"
    code=$?
}
said() { grep -qF -- "$1" "$TMP/err"; }
called() { grep -q -- "$1" "$LOG"; }

# 1. nothing missing: nothing installed, nothing said
bin=$(stubs)
run "$bin" demo.sh
[ $code -eq 0 ] || fail "demo.sh, nothing missing: exit $code ($(cat "$TMP/err"))"
called '^apt-get' && fail "demo.sh, nothing missing, ran apt-get: $(cat "$LOG")"
said missing && fail "demo.sh, nothing missing, says: $(cat "$TMP/err")"
grep -q "^translate -m " "$TMP/out" || fail "demo.sh did not run translate: $(cat "$TMP/out")"
run "$bin" run-tests.sh
[ $code -eq 0 ] || fail "run-tests.sh, nothing missing: exit $code ($(cat "$TMP/err"))"
called '^apt-get' && fail "run-tests.sh, nothing missing, ran apt-get: $(cat "$LOG")"
called '^ctest' || fail "run-tests.sh did not run ctest"

# 2. build packages missing, not root, no sudo: the one line, and stop
bin=$(stubs cmake pc:inih)
run "$bin" demo.sh
[ $code -eq 1 ] || fail "demo.sh without cmake: exit $code, expected 1"
said "    sudo apt-get install cmake libinih-dev" || fail "demo.sh's install line: $(cat "$TMP/err")"
said "cmake: required by the build" || fail "demo.sh does not name cmake: $(cat "$TMP/err")"
called '^apt-get' && fail "demo.sh without privileges ran apt-get"
grep -q "^translate" "$TMP/out" && fail "demo.sh translated without its dependencies"
grep -q "command not found" "$TMP/err" && fail "demo.sh ran a missing command: $(cat "$TMP/err")"
# as root, and with password-less sudo: apt-get runs (the stub installs nothing: still missing)
FAKE_UID=0 run "$bin" demo.sh
called '^apt-get update' || fail "demo.sh as root did not run apt-get update: $(cat "$LOG")"
called '^apt-get install -y .* cmake libinih-dev$' || fail "demo.sh as root: $(cat "$LOG")"
[ $code -eq 1 ] && said "still missing after apt-get" || fail "demo.sh, apt-get gave nothing: exit $code"
FAKE_SUDO=ok run "$bin" demo.sh
called '^sudo -n apt-get install -y .* cmake libinih-dev$' || fail "demo.sh with sudo -n: $(cat "$LOG")"
FAKE_UID=0 NMT_DEPS_INSTALL=no run "$bin" demo.sh
called '^apt-get' && fail "NMT_DEPS_INSTALL=no ran apt-get"
said "    apt-get install cmake libinih-dev" || fail "demo.sh as root, NMT_DEPS_INSTALL=no: $(cat "$TMP/err")"

# 3. optional packages missing: named with what skips, the line, and on
bin=$(stubs chromium py:selenium pc:libmicrohttpd)
run "$bin" run-tests.sh
[ $code -eq 0 ] || fail "run-tests.sh without chromium: exit $code ($(cat "$TMP/err"))"
said "    sudo apt-get install libmicrohttpd-dev chromium python3-selenium" ||
    fail "run-tests.sh's install line: $(cat "$TMP/err")"
said "chromium: test_server_page (the browser test) skips" || fail "run-tests.sh does not say what skips"
called '^ctest' || fail "run-tests.sh stopped for an optional package"
run "$bin" demo.sh
[ $code -eq 0 ] || fail "demo.sh without libmicrohttpd: exit $code"
said "sudo apt-get install libmicrohttpd-dev" || fail "demo.sh's install line: $(cat "$TMP/err")"
said chromium && fail "demo.sh asks for a test package: $(cat "$TMP/err")"

# 4. one build directory and one build type for both commands
bin=$(stubs)
rm -rf "$repo/build"
run "$bin" demo.sh
demo_configure=$(grep -m1 "^cmake -S" "$LOG")
run "$bin" run-tests.sh
tests_configure=$(grep -m1 "^cmake -S" "$LOG")
[[ $demo_configure == *"-B build "*"-DCMAKE_BUILD_TYPE=RelWithDebInfo"* ]] ||
    fail "demo.sh configures '$demo_configure', expected build/ as RelWithDebInfo"
[ "$demo_configure" = "$tests_configure" ] ||
    fail "demo.sh and run-tests.sh configure differently: '$demo_configure' vs '$tests_configure'"

# 5. with the binary there (a source may have changed since), demo.sh still builds
printf 'CMAKE_BUILD_TYPE:STRING=RelWithDebInfo\n' > "$repo/build/CMakeCache.txt"
run "$bin" demo.sh
[ $code -eq 0 ] || fail "demo.sh, second run: exit $code"
called "^cmake --build build " || fail "demo.sh ran the existing binary without building"
called "^cmake -S" && fail "demo.sh reconfigured a configured build"

# 6. the README
readme=$SRC/README.md
grep -n '\.\./' "$readme" && fail "README.md points outside the repository (../)"
demo_line=$(grep -n -m1 '^scripts/demo.sh' "$readme" | cut -d: -f1)
tests_line=$(grep -n -m1 '^scripts/run-tests.sh' "$readme" | cut -d: -f1)
if [ -z "$demo_line" ] || [ -z "$tests_line" ]; then
    fail "README.md lacks scripts/demo.sh ($demo_line) or scripts/run-tests.sh ($tests_line)"
elif ! [ "$demo_line" -lt "$tests_line" ]; then
    fail "README.md order: demo $demo_line, tests $tests_line"
fi
[ "$(grep -c '^scripts/demo.sh' "$readme")" -eq 1 ] || fail "README.md: the demo command more than once"
[ "$(grep -c '^scripts/run-tests.sh' "$readme")" -eq 1 ] || fail "README.md: the test command more than once"
all_packages=$(source "$SRC/scripts/deps.sh" && nmt_deps_packages build feature test browser)
[ -n "$all_packages" ] || fail "scripts/deps.sh lists no packages"
[ "$(grep -c 'apt-get install' "$readme")" -eq 1 ] || fail "README.md: not one apt-get install line"
apt_line=$(grep -m1 'apt-get install' "$readme")
[ "$apt_line" = "sudo apt-get install $all_packages" ] ||
    fail "README's install line is not scripts/deps.sh's packages: '$apt_line' vs '$all_packages'"
for link in $(grep -oE '\]\([^)#]+' "$readme" | sed 's/^](//' | grep -v '://'); do
    [ -e "$SRC/$link" ] || fail "README.md links to $link, which does not exist"
done

if [ $failures -ne 0 ]; then echo "test_scripts: $failures failures" >&2; exit 1; fi
echo "test_scripts: passed"
