#!/usr/bin/env bash
# The newcomer's path (README: install line, then scripts/demo.sh, then
# scripts/run-tests.sh), checked without building anything: the scripts run
# from a copy of scripts/ and models/demo.de with a fake cmake and ctest
# that record their arguments.
#  - demo.sh names the missing build dependencies by package, with the
#    apt-get line (here: no cmake on PATH, no inih for pkg-config);
#  - demo.sh and run-tests.sh configure the same build directory with the
#    same build type (so the second command does not rebuild everything);
#  - demo.sh always runs the (incremental) build, so an edited source never
#    leaves a stale binary running;
#  - the README: the install line before the two commands, each command once,
#    every package demo.sh checks in the install line, no link outside the
#    repository, every relative link resolving.
set -uo pipefail
unset BUILD
SRC=${NMT_SOURCE_DIR:-$(cd "$(dirname "$0")/../.." && pwd)}
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
failures=0
fail() { echo "FAIL: $*" >&2; failures=$((failures + 1)); }

repo=$TMP/repo
mkdir -p "$repo/scripts" "$repo/models" "$TMP/fake"
cp "$SRC/scripts/demo.sh" "$SRC/scripts/run-tests.sh" "$repo/scripts/"
printf 'Ein Hund.\n' > "$repo/models/demo.de"
# cmake and ctest that only record; "cmake --build" leaves a translate stub
# that prints its arguments (the demo's translation).
cat > "$TMP/fake/cmake" <<EOF
#!/usr/bin/env bash
echo "cmake \$*" >> "$TMP/calls.log"
if [ "\$1" = --build ]; then
    printf '#!/bin/sh\necho "translate \$*"\n' > "\$2/translate"
    chmod +x "\$2/translate"
elif [ "\$1" = -S ]; then
    mkdir -p "\$4"
fi
EOF
printf '#!/usr/bin/env bash\necho "ctest $*" >> "%s/calls.log"\n' "$TMP" > "$TMP/fake/ctest"
chmod +x "$TMP/fake/cmake" "$TMP/fake/ctest"

# 1. missing dependencies: a PATH without cmake, a pkg-config without inih
mkdir -p "$TMP/nocmake" "$TMP/nopc"
IFS=: read -ra path_dirs <<< "$PATH"
for dir in "${path_dirs[@]}"; do
    for exe in "$dir"/*; do
        name=${exe##*/}
        [ -x "$exe" ] && [ "$name" != cmake ] && [ ! -e "$TMP/nocmake/$name" ] &&
            ln -s "$exe" "$TMP/nocmake/$name"
    done
done
PATH=$TMP/nocmake PKG_CONFIG_LIBDIR=$TMP/nopc PKG_CONFIG_PATH='' \
    bash "$repo/scripts/demo.sh" > "$TMP/deps.out" 2>&1; code=$?
[ $code -ne 0 ] || fail "demo.sh without cmake: exit 0"
grep -q "missing build dependencies: .*cmake" "$TMP/deps.out" || fail "demo.sh does not name cmake: $(cat "$TMP/deps.out")"
grep -q "missing build dependencies: .*libinih-dev" "$TMP/deps.out" || fail "demo.sh does not name libinih-dev"
grep -q "apt-get install .*cmake" "$TMP/deps.out" || fail "demo.sh gives no apt-get line: $(cat "$TMP/deps.out")"
grep -q "command not found" "$TMP/deps.out" && fail "demo.sh ran a missing command: $(cat "$TMP/deps.out")"

# 2. one build directory and one build type for both commands
: > "$TMP/calls.log"
PATH=$TMP/fake:$PATH bash "$repo/scripts/demo.sh" > "$TMP/demo.out" 2> "$TMP/demo.err"; code=$?
[ $code -eq 0 ] || fail "demo.sh with a fake cmake: exit $code ($(cat "$TMP/demo.err"))"
grep -q "^translate -m " "$TMP/demo.out" || fail "demo.sh did not run translate: $(cat "$TMP/demo.out")"
demo_configure=$(grep -m1 "^cmake -S" "$TMP/calls.log")
: > "$TMP/calls.log"
PATH=$TMP/fake:$PATH bash "$repo/scripts/run-tests.sh" > /dev/null 2>&1 || fail "run-tests.sh with a fake cmake: exit $?"
tests_configure=$(grep -m1 "^cmake -S" "$TMP/calls.log")
[[ $demo_configure == *"-B build "*"-DCMAKE_BUILD_TYPE=RelWithDebInfo"* ]] ||
    fail "demo.sh configures '$demo_configure', expected build/ as RelWithDebInfo"
[ "$demo_configure" = "$tests_configure" ] ||
    fail "demo.sh and run-tests.sh configure differently: '$demo_configure' vs '$tests_configure'"

# 3. with the binary there (a source may have changed since), demo.sh still builds
printf 'CMAKE_BUILD_TYPE:STRING=RelWithDebInfo\n' > "$repo/build/CMakeCache.txt"
: > "$TMP/calls.log"
PATH=$TMP/fake:$PATH bash "$repo/scripts/demo.sh" > /dev/null 2>&1 || fail "demo.sh, second run: exit $?"
grep -q "^cmake --build build " "$TMP/calls.log" || fail "demo.sh ran the existing binary without building"
grep -q "^cmake -S" "$TMP/calls.log" && fail "demo.sh reconfigured a configured build"

# 4. the README
readme=$SRC/README.md
grep -n '\.\./' "$readme" && fail "README.md points outside the repository (../)"
install_line=$(grep -n -m1 'apt-get install' "$readme" | cut -d: -f1)
demo_line=$(grep -n -m1 '^scripts/demo.sh' "$readme" | cut -d: -f1)
tests_line=$(grep -n -m1 '^scripts/run-tests.sh' "$readme" | cut -d: -f1)
if [ -z "$install_line" ] || [ -z "$demo_line" ] || [ -z "$tests_line" ]; then
    fail "README.md lacks the install line ($install_line), scripts/demo.sh ($demo_line) or scripts/run-tests.sh ($tests_line)"
elif ! [ "$install_line" -lt "$demo_line" ] || ! [ "$demo_line" -lt "$tests_line" ]; then
    fail "README.md order: install line $install_line, demo $demo_line, tests $tests_line"
fi
[ "$(grep -c '^scripts/demo.sh' "$readme")" -eq 1 ] || fail "README.md: the demo command more than once"
[ "$(grep -c '^scripts/run-tests.sh' "$readme")" -eq 1 ] || fail "README.md: the test command more than once"
packages=$(sed -n 's/^BUILD_PACKAGES="\(.*\)"$/\1/p' "$SRC/scripts/demo.sh")
[ -n "$packages" ] || fail "demo.sh: no BUILD_PACKAGES line"
apt_line=$(grep -m1 'apt-get install' "$readme")
for p in $packages; do
    [[ " $apt_line " == *" $p "* ]] || fail "README's install line lacks $p (demo.sh checks it): $apt_line"
done
for link in $(grep -oE '\]\([^)#]+' "$readme" | sed 's/^](//' | grep -v '://'); do
    [ -e "$SRC/$link" ] || fail "README.md links to $link, which does not exist"
done

if [ $failures -ne 0 ]; then echo "test_scripts: $failures failures" >&2; exit 1; fi
echo "test_scripts: passed"
