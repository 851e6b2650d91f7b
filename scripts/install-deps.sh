#!/usr/bin/env bash
# Installs the Debian packages jobrun needs to build, test and benchmark, if any is missing.
# Safe to run repeatedly: it does nothing when everything is present.
#   build:      libsqlite3-dev libssl-dev libcurl4-openssl-dev pkg-config
#   tests:      nginx-light (plain-URL downloads), sqlite3, systemd (systemd-analyze verify),
#               postgresql (initdb/pg_ctl: the tests start their own server in a temp folder),
#               kubernetes-validate from PyPI (CronJob manifests)
#   benchmarks: aria2 curl hyperfine time
set -euo pipefail

packages=(libsqlite3-dev libssl-dev libcurl4-openssl-dev pkg-config sqlite3 curl nginx-light aria2 time)
[ "${1:-}" = "--bench" ] && packages+=(hyperfine)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
# PostgreSQL: any installed major version will do, as long as initdb and pg_ctl are there.
if ! ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 && ! command -v initdb >/dev/null; then
  missing+=(postgresql)
fi
# kubernetes-validate (PyPI): the tests check the generated CronJobs against Kubernetes' schemas.
if ! command -v kubernetes-validate >/dev/null; then
  echo "install-deps: installing kubernetes-validate (pip)" >&2
  python3 -m pip install -q kubernetes-validate >/dev/null
fi
[ ${#missing[@]} -eq 0 ] && exit 0

SUDO=""
if [ "$(id -u)" -ne 0 ]; then
  command -v sudo >/dev/null || { echo "install-deps: need root (or sudo) to install: ${missing[*]}" >&2; exit 1; }
  SUDO="sudo"
fi
echo "install-deps: installing ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
# nginx's package starts a system service on port 80 when it can; we only need the binary.
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
