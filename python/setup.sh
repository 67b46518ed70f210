#!/usr/bin/env bash
# One-time set-up for the Python package's tests: Debian's python3 with venv and pip (the
# tests make their own virtual environment and install maturin, pytest and pandas into it).
# Does nothing when python3 can already make a virtual environment with pip.
set -euo pipefail
if python3 -c 'import venv, ensurepip' >/dev/null 2>&1; then
  exit 0
fi
sudo=""
[ "$(id -u)" = 0 ] || sudo="sudo"
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq python3 python3-venv python3-pip >/dev/null
