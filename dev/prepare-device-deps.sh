#!/usr/bin/env bash
# Copies this machine's libinih and libutf8proc (headers, libraries, a
# relocatable inih.pc), and nmt-server's libmicrohttpd and jansson with the
# libraries libmicrohttpd links (GnuTLS and its own), into .carry/deps for a
# GPU machine whose image lacks them; dev/gpu-check.sh picks them up. Run
# here, then carry .carry.
set -euo pipefail
cd "$(dirname "$0")/.."
D=.carry/deps
mkdir -p "$D/include" "$D/lib/pkgconfig"
cp /usr/include/ini.h /usr/include/utf8proc.h "$D/include/"
for l in libinih.so libinih.so.1 libutf8proc.so libutf8proc.so.2; do
    cp "$(readlink -f /usr/lib/x86_64-linux-gnu/$l)" "$D/lib/$l"   # no links: carry keeps files
done
cat > "$D/lib/pkgconfig/inih.pc" <<'PC'
prefix=${pcfiledir}/../..
includedir=${prefix}/include
libdir=${prefix}/lib

Name: inih
Description: simple .INI file parser
Version: 55
Libs: -L${libdir} -linih
Cflags: -I${includedir}
PC
# nmt-server's: libmicrohttpd (and what it links: GnuTLS and its libraries)
# and jansson, under their sonames and their link names.
cp /usr/include/microhttpd.h /usr/include/jansson.h /usr/include/jansson_config.h "$D/include/"
for l in libmicrohttpd.so.12 libjansson.so.4 libgnutls.so.30 libp11-kit.so.0 libidn2.so.0 \
         libunistring.so.2 libtasn1.so.6 libnettle.so.8 libhogweed.so.6 libgmp.so.10 libffi.so.8; do
    cp "$(readlink -f /usr/lib/x86_64-linux-gnu/$l)" "$D/lib/$l"
done
cp "$D/lib/libmicrohttpd.so.12" "$D/lib/libmicrohttpd.so"
cp "$D/lib/libjansson.so.4" "$D/lib/libjansson.so"
for pc in libmicrohttpd:microhttpd jansson:jansson; do
    name=${pc%%:*} lib=${pc##*:}
    cat > "$D/lib/pkgconfig/$name.pc" <<PC
prefix=\${pcfiledir}/../..
includedir=\${prefix}/include
libdir=\${prefix}/lib

Name: $name
Description: carried for nmt-server
Version: 0
Libs: -L\${libdir} -l$lib
Cflags: -I\${includedir}
PC
done
echo "prepared $D"
