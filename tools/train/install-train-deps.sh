#!/usr/bin/env bash
# Installs the Debian 12 packages that training the default model needs: PyTorch and friends for
# Debian's own python3, and the packages whose text makes up the training corpus (see
# models/README.md). Not part of the build or CI install (deploy/install-deps.sh): nothing in
# `make test` needs PyTorch. Idempotent: apt is not touched when nothing is missing.
set -euo pipefail

packages=(
    python3 python3-torch python3-numpy python3-regex
    # Debian's torch calls the system libblas.so.3; the default reference BLAS runs its matmuls
    # at ~3 GFLOP/s, OpenBLAS (OpenMP build, like torch's own threads) at ~35 on two cores
    libopenblas0-openmp
    # the loss-curve PNG is drawn with Pillow: python3-matplotlib cannot be installed beside
    # libboost1.81-dev (its python3-fonttools -> scipy -> pythran chain wants libboost1.74-dev)
    python3-pil
    # corpus: the BSD fortune data files (not fortunes-off)
    fortunes fortunes-min
)

source "$(dirname "${BASH_SOURCE[0]}")/../../deploy/apt-missing.sh"
apt_missing "${packages[@]}"

if [ ${#missing[@]} -eq 0 ]; then
    echo "install-train-deps: all ${#packages[@]} packages present"
    exit 0
fi

apt_become_root install-train-deps "$0" "$@"

apt_install_missing install-train-deps
