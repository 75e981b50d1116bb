#!/usr/bin/env bash
# Install the Debian packages etsim builds and tests with, if any is missing.
# Uses sudo when not root.  Safe to run again: it installs only what is absent.
set -euo pipefail
PKGS=(build-essential cmake pkg-config clang libclang-rt-14-dev
      protobuf-c-compiler libprotobuf-c-dev zlib1g-dev libyaml-dev libjansson-dev
      libopenblas-dev libopenmpi-dev openmpi-bin libcmocka-dev python3
      clang-format
      time  # /usr/bin/time: the CPU seconds the examples' studies and bench/ scripts report
      chromium fonts-dejavu-core)  # the HTML report's test opens every page in headless Chromium
missing=()
for p in "${PKGS[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi
echo "etsim: installing ${missing[*]}" >&2
SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
