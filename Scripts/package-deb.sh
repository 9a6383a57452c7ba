#!/usr/bin/env bash
# Builds a Debian package of the `orchestra` command: the binary with the Swift runtime linked
# in (it runs on a machine without a Swift toolchain), its man page, completions and licence.
#
#   Scripts/package-deb.sh [OUTDIR]      # default .build/deb; prints the .deb's path
#
# Install it with `dpkg -i orchestra_VERSION_ARCH.deb` (apt-get install -f adds the libraries
# of Depends if missing), or look inside without installing: `dpkg -x FILE.deb ROOT`.
set -euo pipefail
cd "$(dirname "$0")/.."

out="${1:-.build/deb}"
for tool in dpkg-deb dpkg ldd objdump; do
    command -v "$tool" >/dev/null 2>&1 || { echo "package-deb.sh: $tool is not on PATH (a Debian machine is needed)" >&2; exit 1; }
done

root="$(mktemp -d)"
trap 'rm -rf "$root"' EXIT
# The package's root becomes the mode of / on install: not mktemp's 0700.
chmod 0755 "$root"
ORCHESTRA_STATIC=1 DESTDIR="$root" Scripts/install.sh /usr >&2

binary="$root/usr/bin/orchestra"
version="$("$binary" --version)"
arch="$(dpkg --print-architecture)"

# Depends: the packages of the shared libraries the binary loads itself (its NEEDED entries:
# libc, libstdc++, zlib, SQLite, curl for URLSession; theirs come with those packages), found by
# asking dpkg which package holds each.
needed="$(objdump -p "$binary" | awk '$1 == "NEEDED" { print $2 }')"
depends="$(for name in $needed; do
    library="$(ldd "$binary" | awk -v name="$name" '$1 == name && $3 ~ /^\// { print $3; exit }')"
    [ -n "$library" ] || continue
    dpkg -S "$library" 2>/dev/null || dpkg -S "$(readlink -f "$library")" 2>/dev/null || true
done | cut -d: -f1 | sort -u | paste -sd, - | sed 's/,/, /g')"
if [ -z "$depends" ]; then
    echo "package-deb.sh: no package holds the binary's libraries; is this a Debian machine?" >&2
    exit 1
fi
if ldd "$binary" | grep -q "not found\|/opt/swift"; then
    echo "package-deb.sh: the binary still needs the Swift toolchain's libraries:" >&2
    ldd "$binary" | grep "not found\|/opt/swift" >&2
    exit 1
fi

install -d -m 0755 "$root/DEBIAN"
installed_size="$(du -sk "$root/usr" | cut -f1)"
cat > "$root/DEBIAN/control" <<CONTROL
Package: orchestra
Version: $version
Architecture: $arch
Maintainer: Orchestra maintainers <maintainers@users.noreply.a-seed-f7fd8194.example>
Installed-Size: $installed_size
Depends: $depends
Section: devel
Priority: optional
Description: coordinate asynchronous work and run dependent HTTP requests
 orchestra runs YAML or JSON workflows of HTTP requests that depend on each
 other (captures, for_each, asserts, auth, cookies, reports, resumable and
 distributed runs), and demonstrates Orchestra, a Swift package for
 coordinating async work: orchestra demo, run, validate, graph, status, worker.
CONTROL

install -d "$out"
deb="$out/orchestra_${version}_${arch}.deb"
dpkg-deb --root-owner-group --build "$root" "$deb" >&2
echo "$deb"
