#!/usr/bin/env bash
# Provides what the browser tests need on a Debian machine, as root: Debian's
# chromium and chromium-driver (selenium is handed these binaries; its own
# driver manager would try to download one). Without them those tests skip.
set -euo pipefail
if command -v chromium >/dev/null && command -v chromedriver >/dev/null; then
    exit 0
fi
if [ "$(id -u)" != 0 ]; then
    echo "scripts/browser.sh: needs root to install chromium and chromium-driver" >&2
    exit 1
fi
echo "installing chromium chromium-driver" >&2
apt-get update -qq
DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium chromium-driver >/dev/null
