# carry-env.sh: sourced by dev/gpu-check.sh and dev/eval/lsh-common.sh (not
# run alone). The device image lacks libinih and libutf8proc:
# dev/prepare-device-deps.sh copies Debian's builds into .carry/deps, and
# use_carried_deps ROOT points pkg-config, CMake and the loader at them when
# they are there.
use_carried_deps() {
    local deps="$1/.carry/deps"
    [ -d "$deps" ] || return 0
    export PKG_CONFIG_PATH="$deps/lib/pkgconfig${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}"
    export CMAKE_PREFIX_PATH="$deps${CMAKE_PREFIX_PATH:+:$CMAKE_PREFIX_PATH}"
    export LD_LIBRARY_PATH="$deps/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
}
