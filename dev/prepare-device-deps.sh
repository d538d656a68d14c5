#!/usr/bin/env bash
# Copies this machine's libinih and libutf8proc (headers, libraries, a
# relocatable inih.pc) into .carry/deps for a GPU machine whose image lacks
# them; dev/gpu-check.sh picks them up. Run here, then carry .carry.
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
echo "prepared $D"
