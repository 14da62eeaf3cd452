#!/usr/bin/env bash
# Provides what the Docker tests need on a Debian machine, as root: Debian's
# docker.io and debootstrap, a running dockerd (no bridge, no iptables: every
# sandbox container runs with --network none), and envgym's images, built
# from Debian packages by `envgym sandbox build`. Run scripts/setup.sh first.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ "$(id -u)" != 0 ]; then
    echo "scripts/docker.sh: needs root (apt-get, dockerd, debootstrap)" >&2
    exit 1
fi
need=()
command -v dockerd >/dev/null || need+=(docker.io)
command -v debootstrap >/dev/null || need+=(debootstrap)
if [ ${#need[@]} -gt 0 ]; then
    echo "installing ${need[*]}" >&2
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" >/dev/null
fi
if ! docker info >/dev/null 2>&1; then
    echo "starting dockerd (log: /var/log/envgym-dockerd.log)" >&2
    nohup dockerd --bridge=none --iptables=false --ip-forward=false \
        >/var/log/envgym-dockerd.log 2>&1 &
    for _ in $(seq 60); do
        docker info >/dev/null 2>&1 && break
        sleep 1
    done
    docker info >/dev/null 2>&1 || { tail -20 /var/log/envgym-dockerd.log >&2; exit 1; }
fi
.venv/bin/envgym sandbox build
