# carry-env.sh: sourced by dev/gpu-check.sh, dev/eval/lsh-common.sh and
# dev/bench/multi_gpu.sh (not run alone). The device image lacks libinih and
# libutf8proc: dev/prepare-device-deps.sh copies Debian's builds into
# .carry/deps, and use_carried_deps ROOT points pkg-config, CMake and the
# loader at them when they are there. It lacks Open MPI too:
# dev/prepare-device-mpi.sh copies one into .carry/mpi, and use_carried_mpi
# ROOT (below) makes it the one that runs.
use_carried_deps() {
    local deps="$1/.carry/deps"
    [ -d "$deps" ] || return 0
    export PKG_CONFIG_PATH="$deps/lib/pkgconfig${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}"
    export CMAKE_PREFIX_PATH="$deps${CMAKE_PREFIX_PATH:+:$CMAKE_PREFIX_PATH}"
    export LD_LIBRARY_PATH="$deps/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
}

# use_carried_mpi ROOT: the Open MPI that dev/prepare-device-mpi.sh copied
# into .carry/mpi, for a machine without one: mpirun, mpicc and libmpi on
# PATH and LD_LIBRARY_PATH; Open MPI's (OPAL_*) and PMIx's (PMIX_*)
# install-directory variables at the tree, so that the components, help texts
# and parameter files are the tree's and never the system's; MPI_HOME for
# CMake's FindMPI. Run as root (the GPU machine), mpirun is allowed to; with
# no ssh it launches on this host only. Nothing when the tree is missing.
use_carried_mpi() {
    local m
    m="$(cd "$1" && pwd)/.carry/mpi"
    [ -x "$m/bin/mpirun" ] || return 0
    export PATH="$m/bin${PATH:+:$PATH}"
    export LD_LIBRARY_PATH="$m/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
    export MPI_HOME="$m"
    export OPAL_PREFIX="$m" OPAL_EXEC_PREFIX="$m" OPAL_BINDIR="$m/bin" OPAL_SBINDIR="$m/bin" \
        OPAL_LIBEXECDIR="$m/bin" OPAL_LIBDIR="$m/lib" OPAL_PKGLIBDIR="$m/lib/openmpi" \
        OPAL_INCLUDEDIR="$m/include" OPAL_PKGINCLUDEDIR="$m/include/openmpi" \
        OPAL_DATAROOTDIR="$m/share" OPAL_DATADIR="$m/share" OPAL_PKGDATADIR="$m/share/openmpi" \
        OPAL_SYSCONFDIR="$m/etc"
    export OMPI_MCA_mca_base_component_path="$m/lib/openmpi"
    export PMIX_PREFIX="$m" PMIX_EXEC_PREFIX="$m" PMIX_BINDIR="$m/bin" PMIX_LIBDIR="$m/lib" \
        PMIX_PKGLIBDIR="$m/lib/pmix" PMIX_DATAROOTDIR="$m/share" PMIX_DATADIR="$m/share" \
        PMIX_PKGDATADIR="$m/share/pmix" PMIX_SYSCONFDIR="$m/etc" PMIX_INCLUDEDIR="$m/include"
    export PMIX_MCA_mca_base_component_path="$m/lib/pmix"
    export HWLOC_PLUGINS_PATH="$m/lib/hwloc" # none carried: no other hwloc's plugins
    if [ -d "$m/lib/prte" ]; then # Open MPI 5's launcher (PRRTE): untried, Debian 12 has 4.1
        export PRTE_PREFIX="$m" PRTE_MCA_prte_base_component_path="$m/lib/prte"
    fi
    if [ "$(id -u)" = 0 ]; then
        export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
    fi
    local d agent=
    local IFS=:
    for d in $PATH; do # (bash's command -v also names a file that cannot run)
        [ -x "$d/ssh" ] || [ -x "$d/rsh" ] && agent=1
    done
    # No ssh: mpirun would refuse to start; on one host it never calls it.
    [ -n "$agent" ] || export OMPI_MCA_plm_rsh_agent=false
}
