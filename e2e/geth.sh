#!/usr/bin/env bash
# Builds go-ethereum's geth from the Go module proxy, once, in a throwaway module outside the
# repository, and prints the binary's path. chain.test.mjs runs it as `geth --dev`, a real EVM
# development node. A failed build exits non-zero, and the test fails with it (it never skips).
#
# Why v1.17.8 and not newer: from v1.17.9 on, geth's beacon light client needs
# github.com/attestantio/go-eth2-client v0.30.x, which the module proxy we build from refuses
# (HTTP 403, "This module version is not available"); v1.17.8 and older use protolambda/zrnt.
set -euo pipefail
version=${GETH_VERSION:-v1.17.8}
dir=${LATCHKEY_GETH_CACHE:-$HOME/.cache/latchkey-geth-$version}
if [ -x "$dir/geth" ]; then
  echo "$dir/geth"
  exit 0
fi
mkdir -p "$dir"
cd "$dir"
[ -f go.mod ] || go mod init gethbuild >&2
export GOFLAGS=-mod=mod GOTOOLCHAIN=${GOTOOLCHAIN:-local} CGO_ENABLED=${CGO_ENABLED:-0}
go get "github.com/ethereum/go-ethereum/cmd/geth@$version" >&2
go build -o geth.tmp github.com/ethereum/go-ethereum/cmd/geth >&2
mv geth.tmp geth
echo "$dir/geth"
