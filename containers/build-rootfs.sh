#!/bin/sh
# Build the sandbox's root filesystem from Debian packages: a minimal Debian
# (debootstrap --variant=minbase) with python3 and numpy, the tools terminal
# tasks use (git, make, jq, patch, file, bzip2, xz, pytest), and the folders the
# sandboxes mount over. No container registry is involved. envgym rebuilds the
# folder when this script changes (it stamps the script's hash into it).
#
#   sh containers/build-rootfs.sh DEST [SUITE]
#
# The mirror is read from this machine's apt sources (the entry that serves
# Debian's own suites), so the build uses whatever mirror apt already uses.
# Needs root and debootstrap (apt-get install debootstrap).
set -eu

dest=${1:?usage: build-rootfs.sh DEST [SUITE]}
suite=${2:-}

if [ -z "$suite" ]; then
    suite=$(. /etc/os-release 2>/dev/null && echo "${VERSION_CODENAME:-}")
    suite=${suite:-bookworm}
fi

mirror=${ENVGYM_DEBIAN_MIRROR:-}
if [ -z "$mirror" ]; then
    # deb822 sources first, then one-line sources; keep the entry for $suite.
    for f in /etc/apt/sources.list.d/*.sources /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
        [ -f "$f" ] || continue
        case "$f" in
        *.sources)
            mirror=$(awk -v suite="$suite" '
                /^URIs:/ { uri = $2 }
                /^Suites:/ { for (i = 2; i <= NF; i++) if ($i == suite) found = uri }
                /^$/ { uri = "" }
                END { if (found) print found }' "$f")
            ;;
        *)
            mirror=$(awk -v suite="$suite" '$1 == "deb" && $0 !~ /\[/ && $3 == suite { print $2; exit }' "$f")
            ;;
        esac
        [ -n "$mirror" ] && break
    done
fi
if [ -z "$mirror" ]; then
    echo "build-rootfs.sh: no apt source serves Debian '$suite'; set ENVGYM_DEBIAN_MIRROR" >&2
    exit 2
fi

tmp="$dest.partial"
rm -rf "$tmp"
mkdir -p "$tmp"
echo "debootstrap $suite from $mirror into $dest (about a minute)" >&2
debootstrap --variant=minbase --include=python3,python3-numpy,python3-pytest,git,make,jq,patch,file,bzip2,xz-utils "$suite" "$tmp" "$mirror" >&2
mkdir -p "$tmp/work" "$tmp/opt/envgym"
chmod 1777 "$tmp/work"
# Nothing in the sandbox needs apt's lists or caches.
rm -rf "$tmp/var/lib/apt/lists"/* "$tmp/var/cache/apt"/*.bin "$tmp/var/cache/apt/archives"/*.deb
rm -rf "$dest"
mv "$tmp" "$dest"
echo "root filesystem ready: $dest" >&2
