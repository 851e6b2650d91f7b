#!/usr/bin/env bash
# Installs the Debian packages jobrun needs to build, test and benchmark, if any is missing.
# Safe to run repeatedly: it does nothing when everything is present.
#   build:      libsqlite3-dev libssl-dev libcurl4-openssl-dev pkg-config
#               libjpeg62-turbo-dev (cloudd's JPEG photos)
#   run:        libvips42 (photo representations: jobrun loads it when it makes one; no header or
#               link of it is needed to build)
#   tests:      nginx-light (plain-URL downloads), openssl (test TLS certificates), sqlite3, systemd (systemd-analyze verify),
#               prometheus (promtool check metrics, a real scrape), prometheus-node-exporter (textfile scrape),
#               prometheus-pushgateway (the metrics push of CronJobs),
#               postgresql (initdb/pg_ctl: the tests start their own server in a temp folder),
#               iproute2 (ip netns, veth, bridge: the multi-host tests give each host its own network)
#   benchmarks: aria2 curl hyperfine time libvips-tools (vipsthumbnail, the representations benchmark's peer)
#   from PyPI:  moto[server] (the S3 server tests start), awscli (the S3 benchmark's peer),
#               kubernetes-validate (the tests check generated CronJobs against Kubernetes' schemas),
#               sqlcipher3 (SQLCipher 4, the independent reader and writer of encrypted stores in the tests)
set -euo pipefail

packages=(libsqlite3-dev libssl-dev libcurl4-openssl-dev libjpeg62-turbo-dev libvips42 pkg-config sqlite3 curl openssl nginx-light aria2 time systemd prometheus prometheus-node-exporter prometheus-pushgateway iproute2)
[ "${1:-}" = "--bench" ] && packages+=(hyperfine libvips-tools)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
# PostgreSQL: any installed major version will do, as long as initdb and pg_ctl are there.
if ! ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 && ! command -v initdb >/dev/null; then
  missing+=(postgresql)
fi

# Python tools for the object-storage and Kubernetes tests and the S3 benchmark, installed with
# pip when missing.
pip_missing=()
command -v moto_server >/dev/null || pip_missing+=("moto[server]")
command -v aws >/dev/null || pip_missing+=("awscli")
command -v kubernetes-validate >/dev/null || pip_missing+=("kubernetes-validate")
python3 -c "import sqlcipher3" 2>/dev/null || pip_missing+=("sqlcipher3")
if [ ${#pip_missing[@]} -gt 0 ]; then
  command -v pip3 >/dev/null || missing+=(python3-pip)
fi

install_pip() {
  [ ${#pip_missing[@]} -eq 0 ] && return 0
  echo "install-deps: pip installing ${pip_missing[*]}" >&2
  # Debian 12 marks the system Python as externally managed; these are test tools, not system
  # packages, so they go in with --break-system-packages when pip asks for it.
  pip3 install -q "${pip_missing[@]}" 2>/dev/null || pip3 install -q --break-system-packages "${pip_missing[@]}"
}

if [ ${#missing[@]} -eq 0 ]; then
  install_pip
  exit 0
fi

SUDO=""
if [ "$(id -u)" -ne 0 ]; then
  command -v sudo >/dev/null || { echo "install-deps: need root (or sudo) to install: ${missing[*]}" >&2; exit 1; }
  SUDO="sudo"
fi
echo "install-deps: installing ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
# nginx's, prometheus' and node_exporter's packages start system services when they can; the
# tests only need the binaries and start their own instances on loopback: forbid the starts.
policy=/usr/sbin/policy-rc.d
added_policy=""
if [ ! -e "$policy" ]; then
  printf '#!/bin/sh\nexit 101\n' | $SUDO tee "$policy" >/dev/null && $SUDO chmod 0755 "$policy" && added_policy=1
fi
trap 'if [ -n "$added_policy" ]; then $SUDO rm -f "$policy"; fi' EXIT
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
install_pip
