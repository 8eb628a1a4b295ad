#!/usr/bin/env bash
# Build a Debian base image from packages when no registry can be reached (DESIGN §5):
# debootstrap into a folder, then `docker import`. Usage: debootstrap.sh TAG [SUITE] [MIRROR]
set -euo pipefail
tag=${1:?usage: debootstrap.sh TAG [SUITE] [MIRROR]}
suite=${2:-bookworm}
mirror=${3:-http://deb.debian.org/debian}
packages=ca-certificates,python3,python3-venv,procps,curl

if ! command -v debootstrap >/dev/null; then
  echo "debootstrap is missing: install it with 'sudo apt-get install debootstrap'" >&2
  exit 1
fi
root=$(mktemp -d /tmp/amlemu-rootfs.XXXXXX)
trap 'rm -rf "$root"' EXIT

echo "debootstrap $suite ($packages) from $mirror ..."
debootstrap --variant=minbase --include="$packages" "$suite" "$root" "$mirror" \
  | grep -E --line-buffered '^I: (Retrieving|Validating|Extracting|Installing|Configuring|Base system)' \
  | grep -v --line-buffered 'Configuring [a-z0-9]' | sed -u 's/^/  /' || true
test -x "$root/usr/bin/python3" || { echo "debootstrap failed: no python3 in $root" >&2; exit 1; }

# The host's CA bundle goes in too: package mirrors behind a TLS proxy need it, and pip reads it.
install -D -m 0644 /etc/ssl/certs/ca-certificates.crt "$root/usr/local/share/amlemu/host-ca.crt"
cat "$root/usr/local/share/amlemu/host-ca.crt" >> "$root/etc/ssl/certs/ca-certificates.crt"
printf 'deb %s %s main\n' "$mirror" "$suite" > "$root/etc/apt/sources.list"
rm -rf "$root"/var/cache/apt/archives/*.deb "$root"/var/lib/apt/lists/*

echo "importing $tag ..."
tar -C "$root" -c . | docker import \
  --change 'ENV PIP_CERT=/usr/local/share/amlemu/host-ca.crt' \
  --change 'ENV LANG=C.UTF-8' \
  --change 'CMD ["/bin/bash"]' - "$tag" >/dev/null
echo "built $tag"
