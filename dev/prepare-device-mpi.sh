#!/usr/bin/env bash
# Copies this machine's Open MPI (Debian's libopenmpi-dev and openmpi-bin,
# installed with apt-get when missing) into .carry/mpi as a relocatable tree,
# for a GPU machine whose image has no MPI and cannot download one:
#
#   bin/      mpirun and the launcher it is (orterun in Open MPI 4, prterun in
#             5), the daemon it starts on other hosts (orted / prted),
#             ompi_info, and mpicc (the wrapper compiler; CMake's FindMPI asks it)
#   lib/      libmpi and every library it and the programs above load, found
#             with ldd (open-rte/open-pal or prrte, PMIx, hwloc, libevent,
#             libudev, ...), glibc and zlib left to the system
#   lib/openmpi/   the MCA components whose libraries are all in the tree (the
#             single-host transports: self, shared memory, TCP; no UCX,
#             libfabric, verbs, PSM or OpenSHMEM, which would pull in
#             libraries the GPU machine lacks and nothing here needs)
#   lib/pmix/, lib/prte/   PMIx's (and PRRTE's) own components
#   share/openmpi, share/pmix, share/prte   help texts and wrapper data
#   etc/      the MCA parameter files
#   include/  mpi.h and what it includes (mpi-ext.h, the C++ bindings)
#
# Real files only (the carry keeps files, not links): a library is stored
# under its soname, libmpi.so once more as the link name. Copies are
# stripped (--strip-unneeded). dev/carry-env.sh's use_carried_mpi ROOT
# points PATH, LD_LIBRARY_PATH and Open MPI's and PMIx's install-directory
# variables at the tree. Run here, then carry .carry (see docs/scale-out.md,
# "The carried Open MPI").
set -euo pipefail
cd "$(dirname "$0")/.."
D=.carry/mpi

if ! command -v ompi_info > /dev/null || ! command -v mpicc > /dev/null; then
    echo "installing Open MPI (libopenmpi-dev openmpi-bin)"
    apt-get install -y libopenmpi-dev openmpi-bin > /dev/null
fi

# Open MPI's install directories, as this build was configured.
ompi_path() { ompi_info --path "$1" | sed -n "s/^ *[A-Za-z_]*: *//p" | head -1; }
version=$(ompi_info --parsable | sed -n 's/^ompi:version:full://p' | head -1)
bindir=$(ompi_path bindir)
libdir=$(ompi_path libdir)
pkglibdir=$(ompi_path pkglibdir)
pkgdatadir=$(ompi_path pkgdatadir)
incdir=$(ompi_path incdir)
sysconfdir=$(ompi_path sysconfdir)
echo "Open MPI $version: bin $bindir, lib $libdir, components $pkglibdir"

rm -rf "$D"
mkdir -p "$D/bin" "$D/lib/openmpi" "$D/share" "$D/etc" "$D/include"

# Libraries that are the system's everywhere (glibc, zlib): never carried.
system_lib() {
    case "$(basename "$1")" in
        linux-vdso.so.* | ld-linux*.so.* | libc.so.* | libm.so.* | libpthread.so.* | libdl.so.* | \
            librt.so.* | libresolv.so.* | libutil.so.* | libz.so.*) return 0 ;;
    esac
    return 1
}

# ldd's resolved paths of a file, the system's left out; fails on "not found".
deps_of() {
    local out
    out=$(ldd "$1" 2> /dev/null) || return 0 # not dynamic
    if grep -q "not found" <<< "$out"; then
        return 1
    fi
    awk '$2 == "=>" && $3 ~ /^\// {print $3}' <<< "$out" | while read -r lib; do
        system_lib "$lib" || echo "$lib"
    done
}

# The carried libraries: soname -> the real file it is.
declare -A carried=()
carry_lib() { # PATH: the library and, recursively, what it loads
    local real soname
    real=$(readlink -f "$1")
    soname=$(objdump -p "$real" | awk '$1 == "SONAME" {print $2}')
    soname=${soname:-$(basename "$1")}
    [ -n "${carried[$soname]:-}" ] && return 0
    carried[$soname]=$real
    cp "$real" "$D/lib/$soname"
    local dep
    for dep in $(deps_of "$real"); do
        carry_lib "$dep"
    done
}
carry_deps() { # FILE: carries what it loads
    local dep
    for dep in $(deps_of "$1"); do
        carry_lib "$dep"
    done
}

# The launcher and daemons (Open MPI 4: orterun/orted; 5: prterun/prted,
# with prte), ompi_info, and the C wrapper compiler.
launcher=
for b in orterun prterun; do
    if [ -x "$bindir/$b" ]; then
        launcher=$b
        break
    fi
done
[ -n "$launcher" ] || { echo "no orterun or prterun in $bindir" >&2; exit 1; }
for b in $launcher orted prted prte prte_info ompi_info opal_wrapper; do
    [ -x "$bindir/$b" ] || continue
    cp "$(readlink -f "$bindir/$b")" "$D/bin/$b"
    carry_deps "$D/bin/$b"
done
cp "$D/bin/$launcher" "$D/bin/mpirun"
cp "$D/bin/$launcher" "$D/bin/mpiexec"
cp "$D/bin/opal_wrapper" "$D/bin/mpicc"

# libmpi (and its link name for -lmpi).
carry_lib "$libdir/libmpi.so"
cp "$D/lib/$(objdump -p "$(readlink -f "$libdir/libmpi.so")" | awk '$1 == "SONAME" {print $2}')" \
    "$D/lib/libmpi.so"

# The MCA components: those whose libraries resolve here and are Open MPI's
# own, PMIx's, hwloc, libevent or libudev; the rest (UCX, libfabric, verbs,
# PSM, netlink, OpenSHMEM, ...) are left out.
allowed='^(libmpi|libopen-rte|libopen-pal|libprrte|libpmix|libhwloc|libevent[a-z_]*-2\.1|libudev|libmunge|libmca_common_(sm|ompio|monitoring))\.so'
kept=0 dropped=()
for c in "$pkglibdir"/*.so; do
    name=$(basename "$c")
    if deps=$(deps_of "$c") && ! grep -v -E "$allowed" <<< "$(xargs -rn1 basename <<< "$deps")" | grep -q .; then
        cp "$c" "$D/lib/openmpi/$name"
        carry_deps "$c"
        kept=$((kept + 1))
    else
        dropped+=("${name%.so}")
    fi
done
echo "components: $kept kept, ${#dropped[@]} left out (${dropped[*]})"

# PMIx's and PRRTE's components, next to their libraries.
for soname in "${!carried[@]}"; do
    case "$soname" in
        libpmix.so.*) sub=pmix ;;
        libprrte.so.*) sub=prte ;;
        *) continue ;;
    esac
    dir=$(dirname "${carried[$soname]}")/$sub
    [ -d "$dir" ] || continue
    mkdir -p "$D/lib/$sub"
    for c in "$dir"/*.so; do
        [ -e "$c" ] || continue
        if deps_of "$c" > /dev/null; then
            cp "$(readlink -f "$c")" "$D/lib/$sub/$(basename "$c")"
            carry_deps "$c"
        fi
    done
    share=$(dirname "$(dirname "${carried[$soname]}")")/share/$sub
    [ -d "$share" ] || share=/usr/share/$sub
    if [ -d "$share" ]; then
        mkdir -p "$D/share/$sub"
        cp -L "$share"/* "$D/share/$sub/" 2> /dev/null || true
    fi
done

# Help texts, wrapper data, MCA parameter files (Debian's excludes of UCX,
# libfabric and verbs are kept: harmless without those components).
cp -rL "$pkgdatadir" "$D/share/openmpi"
rm -rf "$D/share/openmpi/amca-param-sets" "$D/share/openmpi"/*java* "$D/share/openmpi"/*fort*
for f in openmpi-mca-params.conf openmpi-default-hostfile prte-mca-params.conf pmix-mca-params.conf; do
    [ -f "$sysconfdir/$f" ] && cp "$sysconfdir/$f" "$D/etc/$f"
done
# PMIx's own parameter file names the system's component path: not carried;
# use_carried_mpi sets PMIX_MCA_mca_base_component_path instead.
rm -f "$D/etc/pmix-mca-params.conf"

# Headers: mpi.h, mpi-ext.h and what they include.
cp "$incdir/mpi.h" "$incdir/mpi-ext.h" "$incdir/mpi_portable_platform.h" "$D/include/" 2> /dev/null ||
    cp "$incdir/mpi.h" "$D/include/"
for sub in openmpi/mpiext openmpi/ompi/mpi/cxx; do
    if [ -d "$incdir/$sub" ]; then
        mkdir -p "$D/include/$sub"
        cp -L "$incdir/$sub"/*.h "$D/include/$sub/"
    fi
done

# Stripped copies; a record of what this is.
find "$D/bin" "$D/lib" -type f \( -name '*.so*' -o -perm -u+x \) -exec strip --strip-unneeded {} + 2> /dev/null || true
cat > "$D/VERSION" << EOF
Open MPI $version ($launcher), from $(. /etc/os-release && echo "$PRETTY_NAME"), $(date -u +%F)
launcher=$launcher
EOF
if find "$D" -type l | grep -q .; then
    echo "links left in $D" >&2
    exit 1
fi
echo "prepared $D: $(du -sh "$D" | cut -f1), $(find "$D" -type f | wc -l) files"
