# shellcheck shell=bash
# The Debian packages nmt needs: the one list that scripts/demo.sh,
# scripts/run-tests.sh and .ci/run read (sourced), each package with the check
# that finds it installed and what goes without it. Sets: build (required),
# feature (programs and model kinds built only with them), test (the Python
# and valgrind tests), browser (the server page's browser test).
#
# NMT_DEPS_INSTALL=no: never run apt-get, only say what is missing.

# set|package|check (a shell command, true when installed)|what happens without it
# shellcheck disable=SC2016 # the checks expand when they run
NMT_DEPS_TABLE='
build|cmake|nmt_have_command cmake|required by the build
build|make|nmt_have_command make|required by the build
build|gcc|nmt_have_command "${CC:-cc}"|required by the build
build|g++|nmt_have_command "${CXX:-c++}"|required by the build
build|pkg-config|nmt_have_command pkg-config|required by the build
build|zlib1g-dev|nmt_have_header c zlib.h|required by the build
build|libutf8proc-dev|nmt_have_header c utf8proc.h|required by the build
build|libinih-dev|nmt_have_pkgconfig inih|required by the build
feature|libmicrohttpd-dev|nmt_have_pkgconfig libmicrohttpd|no nmt-server; its tests skip
feature|libjansson-dev|nmt_have_pkgconfig jansson|no nmt-server; its tests skip
feature|openmpi-bin|nmt_have_command mpirun|no translate --mpi; test_cli_mpi skips
feature|libopenmpi-dev|nmt_have_mpi_header|no translate --mpi; test_cli_mpi skips
feature|libopenblas-dev|nmt_have_pkgconfig openblas|no --cpu-kernels blas (the default fast kernels need no library); its BLAS tests skip
feature|libopenblas0-pthread|nmt_have_openblas_pthread|the OpenMP build of OpenBLAS may be picked instead (slower, oversubscribes)
feature|libsentencepiece-dev|nmt_have_header c++ sentencepiece_processor.h|SentencePiece models are refused; their tests skip
feature|sentencepiece|nmt_have_command spm_train|tests/data'"'"'s tiny SentencePiece model cannot be remade
test|python3|nmt_have_command "$NMT_DEPS_PYTHON"|the Python tests skip
test|python3-numpy|nmt_have_python numpy|the Python tests of model files and tools skip
test|python3-torch|nmt_have_python torch|the exporter and PyTorch reference tests skip
test|python3-pytest|nmt_have_python pytest|the binding test runs under its own small runner
test|python3-pip|nmt_have_python pip|the binding'"'"'s install tests skip
test|python3-venv|nmt_have_python ensurepip|the binding'"'"'s install tests skip
test|python3-setuptools|nmt_have_python setuptools|the binding'"'"'s install tests skip
test|python3-wheel|nmt_have_python wheel|the binding'"'"'s install tests skip
test|valgrind|nmt_have_command valgrind|test_cli_valgrind skips
browser|chromium|nmt_have_command chromium|test_server_page (the browser test) skips
browser|chromium-driver|nmt_have_command chromedriver|test_server_page (the browser test) skips
browser|python3-selenium|nmt_have_python selenium|test_server_page (the browser test) skips
'
# The Python the tests run (CMake's NMT_PYTHON): where Debian's python3-* go.
NMT_DEPS_PYTHON=${NMT_PYTHON:-/usr/bin/python3}

nmt_have_command() { command -v "$1" >/dev/null 2>&1; }
nmt_have_pkgconfig() { nmt_have_command pkg-config && pkg-config --exists "$1"; }
nmt_have_openblas_pthread() { dpkg-query -W -f='${Status}' libopenblas0-pthread 2>/dev/null | grep -q 'install ok installed'; }
nmt_have_python() {
    "$NMT_DEPS_PYTHON" -c "import importlib.util, sys; sys.exit(importlib.util.find_spec('$1') is None)" \
        >/dev/null 2>&1
}
# A header where CMake looks too: the compiler's paths and CMAKE_PREFIX_PATH's include/.
nmt_have_header() {
    local compiler=${CC:-cc} flags=() prefixes prefix
    [ "$1" = c++ ] && compiler=${CXX:-c++}
    IFS=: read -ra prefixes <<< "${CMAKE_PREFIX_PATH:-}"
    for prefix in "${prefixes[@]}"; do flags+=("-I$prefix/include"); done
    "$compiler" "${flags[@]}" -E -x "$1" - <<< "#include <$2>" >/dev/null 2>&1
}
nmt_have_mpi_header() { mpicc -E -x c - <<< '#include <mpi.h>' >/dev/null 2>&1; }

# nmt_deps_rows SET...: the table's rows of those sets.
nmt_deps_rows() {
    local row set
    while IFS= read -r row; do
        [ -n "$row" ] || continue
        for set in "$@"; do
            [ "${row%%|*}" = "$set" ] && printf '%s\n' "$row"
        done
    done <<< "$NMT_DEPS_TABLE"
}

# nmt_deps_packages SET...: every package of those sets, one line.
nmt_deps_packages() {
    local row rest packages=()
    while IFS= read -r row; do
        rest=${row#*|}
        packages+=("${rest%%|*}")
    done < <(nmt_deps_rows "$@")
    echo "${packages[*]}"
}

# nmt_deps_missing SET...: "package|what" for each package whose check fails.
nmt_deps_missing() {
    local row set package check what
    while IFS='|' read -r set package check what; do
        eval "$check" || printf '%s|%s\n' "$package" "$what"
    done < <(nmt_deps_rows "$@")
}

# Sets NMT_SUDO to how apt-get runs here ("" as root, "sudo -n" with
# password-less sudo); else false, with NMT_DEPS_WHY saying why not.
nmt_deps_can_install() {
    if [ "${NMT_DEPS_INSTALL:-auto}" = no ]; then
        NMT_DEPS_WHY="NMT_DEPS_INSTALL=no"
    elif ! nmt_have_command apt-get; then
        NMT_DEPS_WHY="no apt-get here"
    elif [ "$(id -u)" -eq 0 ]; then
        NMT_SUDO=""
        return 0
    elif nmt_have_command sudo && sudo -n true >/dev/null 2>&1; then
        NMT_SUDO="sudo -n"
        return 0
    else
        NMT_DEPS_WHY="not root, and no password-less sudo"
    fi
    return 1
}

# nmt_deps_install PACKAGE...: apt-get update, then install them.
nmt_deps_install() {
    # shellcheck disable=SC2086
    DEBIAN_FRONTEND=noninteractive $NMT_SUDO apt-get update -qq &&
        DEBIAN_FRONTEND=noninteractive $NMT_SUDO apt-get install -y -qq --no-install-recommends "$@"
}

# nmt_deps_ensure NAME "REQUIRED SETS" "OPTIONAL SETS": installs every
# missing package when it can; otherwise names them and prints the one
# apt-get line. Returns 1 when a required package is still missing (the caller
# stops); a missing optional one is named with what goes without it.
# Nothing is run when nothing is missing.
nmt_deps_ensure() {
    local name=$1 required=$2 optional=$3 missing_required missing_optional packages=() line rest
    # shellcheck disable=SC2086
    missing_required=$(nmt_deps_missing $required)
    # shellcheck disable=SC2086
    missing_optional=$(nmt_deps_missing $optional)
    [ -n "$missing_required$missing_optional" ] || return 0
    while IFS= read -r line; do
        [ -n "$line" ] && packages+=("${line%%|*}")
    done <<< "$missing_required
$missing_optional"
    if nmt_deps_can_install; then
        echo "$name: installing ${packages[*]}" >&2
        nmt_deps_install "${packages[@]}" >&2 || echo "$name: apt-get failed" >&2
        # shellcheck disable=SC2086
        missing_required=$(nmt_deps_missing $required)
        # shellcheck disable=SC2086
        missing_optional=$(nmt_deps_missing $optional)
        [ -n "$missing_required$missing_optional" ] || return 0
        echo "$name: still missing after apt-get:" >&2
    else
        echo "$name: missing Debian packages (not installed: $NMT_DEPS_WHY); install them with:" >&2
        echo "    $([ "$(id -u)" -eq 0 ] || echo 'sudo ')apt-get install ${packages[*]}" >&2
    fi
    while IFS='|' read -r line rest; do
        [ -n "$line" ] && echo "$name:   $line: $rest" >&2
    done <<< "$missing_required
$missing_optional"
    [ -z "$missing_required" ]
}
