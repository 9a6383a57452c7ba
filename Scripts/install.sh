#!/usr/bin/env bash
# Installs the `orchestra` command: a stripped release binary, its man page, and completions
# for bash, zsh and fish.
#
#   Scripts/install.sh [PREFIX]        # default /usr/local (needs write access to it)
#   Scripts/install.sh ~/.local        # no root: add ~/.local/bin to PATH
#   DESTDIR=/tmp/root Scripts/install.sh /usr     # stage into a root (packaging)
#   ORCHESTRA_STATIC=1 Scripts/install.sh ...     # link the Swift runtime in (no toolchain needed
#                                                 # to run it; a larger binary)
#
# What goes where (under DESTDIR if set):
#   PREFIX/bin/orchestra
#   PREFIX/share/man/man1/orchestra.1
#   PREFIX/share/bash-completion/completions/orchestra
#   PREFIX/share/zsh/site-functions/_orchestra
#   PREFIX/share/fish/vendor_completions.d/orchestra.fish
#   PREFIX/share/doc/orchestra/LICENSE
set -euo pipefail
cd "$(dirname "$0")/.."

prefix=/usr/local
if [ $# -ge 1 ]; then prefix="$1"; fi
case "$prefix" in
    /*) ;;
    *) echo "install.sh: PREFIX must be an absolute path, got '$prefix'" >&2; exit 2 ;;
esac
prefix="${prefix%/}"
root="${DESTDIR:-}"

command -v swift >/dev/null 2>&1 || { echo "install.sh: swift (6.x) is not on PATH" >&2; exit 1; }
command -v strip >/dev/null 2>&1 || { echo "install.sh: strip (binutils) is not on PATH" >&2; exit 1; }

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

flags=(-c release --product orchestra)
if [ -n "${ORCHESTRA_STATIC:-}" ]; then
    # A build folder of its own: the same folder for both kinds of binary would be built anew
    # each time the kind changed.
    flags+=(--static-swift-stdlib --scratch-path .build-static)
    # FoundationNetworking's static library links the system's shared libcurl (a Depends of the
    # .deb) as -lcurl, which needs the development symlink libcurl.so; without the development
    # package, a symlink of our own to libcurl.so.4 stands in for it.
    if ! ldconfig -p | grep -q 'libcurl\.so '; then
        curl_library="$(ldconfig -p | awk '/libcurl\.so\.4 / { print $NF; exit }')"
        if [ -z "$curl_library" ]; then
            echo "install.sh: ORCHESTRA_STATIC=1 needs libcurl (the libcurl4 package)" >&2
            exit 1
        fi
        # A fixed folder: a linker flag that changed would make SwiftPM link again each time.
        links="$PWD/.build-static/orchestra-install-links"
        mkdir -p "$links"
        ln -sf "$curl_library" "$links/libcurl.so"
        flags+=(-Xlinker "-L$links")
    fi
fi
echo "install.sh: building orchestra (release${ORCHESTRA_STATIC:+, Swift runtime linked in})" >&2
swift build "${flags[@]}" >&2
# swift-argument-parser's manual generator, a dependency of the package (debug is enough).
swift build --product generate-manual >&2
binary="$(swift build "${flags[@]}" --show-bin-path)/orchestra"
generator="$(swift build --show-bin-path)/generate-manual"

stage="$work/stage"
mkdir "$stage"
cp "$binary" "$stage/orchestra"
strip "$stage/orchestra"
# The manual's date is the last commit's, so that two installs of one commit are the same.
date="$(git log -1 --format=%cs 2>/dev/null || date +%Y-%m-%d)"
"$generator" "$stage/orchestra" --date "$date" --output-directory "$stage" >&2
for shell in bash zsh fish; do
    "$stage/orchestra" --generate-completion-script "$shell" > "$stage/completion.$shell"
done

install -d "$root$prefix/bin" "$root$prefix/share/man/man1" "$root$prefix/share/bash-completion/completions" \
    "$root$prefix/share/zsh/site-functions" "$root$prefix/share/fish/vendor_completions.d" \
    "$root$prefix/share/doc/orchestra"
install -m 0755 "$stage/orchestra" "$root$prefix/bin/orchestra"
install -m 0644 "$stage/orchestra.1" "$root$prefix/share/man/man1/orchestra.1"
install -m 0644 "$stage/completion.bash" "$root$prefix/share/bash-completion/completions/orchestra"
install -m 0644 "$stage/completion.zsh" "$root$prefix/share/zsh/site-functions/_orchestra"
install -m 0644 "$stage/completion.fish" "$root$prefix/share/fish/vendor_completions.d/orchestra.fish"
install -m 0644 LICENSE "$root$prefix/share/doc/orchestra/LICENSE"

size="$(stat -c %s "$root$prefix/bin/orchestra" 2>/dev/null || stat -f %z "$root$prefix/bin/orchestra")"
echo "installed $root$prefix/bin/orchestra ($((size / 1024 / 1024)) MB, $("$root$prefix/bin/orchestra" --version)), its man page and completions"
if [ -z "$root" ]; then
    case ":$PATH:" in
        *":$prefix/bin:"*) ;;
        *) echo "note: $prefix/bin is not on PATH; add it (export PATH=\"$prefix/bin:\$PATH\")" ;;
    esac
    echo "bash loads the completion from $prefix/share/bash-completion/completions when the bash-completion package is installed (or: source it from ~/.bashrc); zsh needs $prefix/share/zsh/site-functions in its fpath; fish reads $prefix/share/fish/vendor_completions.d"
fi
