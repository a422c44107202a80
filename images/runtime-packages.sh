#!/bin/sh
# Prints the Debian packages that hold the shared libraries the given binaries link
# directly (their DT_NEEDED entries, as ldd resolves them), one per line, sorted: what a
# runtime image must install for them. apt pulls in the rest. Fails when a library is not
# found or belongs to no package, so an image can never miss one silently.
#   images/runtime-packages.sh build/bin/kubedns   ->  libcurl4 libgflags2.2 libgoogle-glog0v6 ...
set -eu
for binary in "$@"; do
  for lib in $(readelf -d "$binary" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p'); do
    path=$(ldd "$binary" | awk -v lib="$lib" '$1 == lib { print $3 }')
    if [ -z "$path" ] || [ "$path" = "not" ]; then
      echo "runtime-packages: $binary: $lib not found" >&2
      exit 1
    fi
    # dpkg knows a file by the path its package installed, /usr/lib or /lib (usrmerge).
    package=$(dpkg -S "$path" 2>/dev/null || dpkg -S "/usr$path" 2>/dev/null ||
              dpkg -S "$(readlink -f "$path")" 2>/dev/null || true)
    package=${package%%:*}
    if [ -z "$package" ]; then
      echo "runtime-packages: $binary: no package owns $path" >&2
      exit 1
    fi
    echo "$package"
  done
done | sort -u
