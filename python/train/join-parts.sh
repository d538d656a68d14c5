#!/usr/bin/env bash
# join-parts.sh DIR NAME: rejoins NAME from DIR/NAME.part* (as split by
# train-europarl.sh) into DIR/NAME and checks it against DIR/NAME.sha256.
set -euo pipefail
dir=${1:?usage: $0 DIR NAME}
name=${2:?usage: $0 DIR NAME}
cd "$dir"
cat "$name".part* > "$name"
sha256sum -c "$name.sha256"
