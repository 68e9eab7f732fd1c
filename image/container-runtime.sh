#!/usr/bin/env bash
# pyxis and enroot built from their source trees and installed where their Debian packages put
# them: the one recipe the slurmd image (image/Dockerfile, stage container-runtime) and the
# real-Slurm test root (tests/slurm/roots/sid.build) both run, so what the tests prove is what
# the image ships.
#   container-runtime.sh PYXIS_SOURCE ENROOT_SOURCE [DESTDIR]
# DESTDIR (default: the root itself) receives the installed tree, capabilities included.
# Needs gcc, make, libc6-dev, linux-libc-dev, makeself, libcap2-bin (setcap) and Slurm's SPANK
# header slurm/spank.h of the Slurm that will load the plugin (slurm-smd-dev on Slinky's image,
# libslurm-dev on Debian).
set -euo pipefail
[ $# -eq 2 ] || [ $# -eq 3 ] || { echo "usage: $0 PYXIS_SOURCE ENROOT_SOURCE [DESTDIR]" >&2; exit 2; }
pyxis=$1 enroot=$2 destdir=${3:-}
multiarch=$(gcc -dumpmachine)

# pyxis: the plugin in /usr/lib/<multiarch>/slurm, as its Debian package installs it (NVIDIA/pyxis
# v0.24.0 debian/rules: prefix= libdir=/usr/lib/$(DEB_HOST_MULTIARCH) datarootdir=/usr/share),
# where plugstack.conf names it (model/builders/containers.py PYXIS_PLUGIN). Compiled against
# this root's slurm/spank.h, so the plugin's plugin_version is the Slurm release that loads it.
pyxis_layout=(prefix= "libdir=/usr/lib/$multiarch" datarootdir=/usr/share)
make -C "$pyxis" "${pyxis_layout[@]}"
make -C "$pyxis" install DESTDIR="$destdir" "${pyxis_layout[@]}"

# enroot: its git submodules (deps/makeself, deps/musl, deps/linux-headers) stand in from the
# distribution whether the tree has them or not, so every tree builds the same way: the helpers
# against glibc (FORCE_GLIBC: NVIDIA/enroot v4.1.2 Makefile and deps/Makefile skip musl), the
# distribution's makeself as enroot-makeself (deps/Makefile makeself/.stamp installs
# deps/makeself/makeself.sh), and linux-libc-dev's headers in /usr/include for the kernel's
# (deps/Makefile linux-headers/.stamp marks them built; the Makefile's -isystem
# deps/dist/linux/include must exist).
install -m 0755 /usr/bin/makeself "$enroot/deps/makeself/makeself.sh"
mkdir -p "$enroot/deps/dist/linux/include"
touch "$enroot/deps/linux-headers/.stamp"
# The layout of enroot's Debian package (pkg/deb/rules: prefix= exec_prefix=/usr
# datarootdir=/usr/share): /usr/bin, /usr/lib/enroot, /usr/share/enroot, /etc/enroot. Built
# before installing, without DESTDIR: the Makefile writes SYSCONFDIR and LIBDIR, DESTDIR
# included, into the enroot script it generates from enroot.in.
enroot_layout=(FORCE_GLIBC=1 prefix= exec_prefix=/usr datarootdir=/usr/share)
make -C "$enroot" "${enroot_layout[@]}"
make -C "$enroot" install DESTDIR="$destdir" "${enroot_layout[@]}"
# The extra hooks that pass Slurm's PMI/PMIx and torch's rendezvous into a container, installed to
# /usr/share/enroot/hooks.d and enabled by copying into /etc/enroot/hooks.d (enroot's Makefile,
# install), as the pyxis flavour of Slinky's image enables them (SlinkyProject/containers
# schedmd/slurm/26.05/ubuntu24.04/Dockerfile.pyxis).
install -m 0755 "$destdir/usr/share/enroot/hooks.d/50-slurm-pmi.sh" \
  "$destdir/usr/share/enroot/hooks.d/50-slurm-pytorch.sh" "$destdir/etc/enroot/hooks.d/"
# The file capabilities of enroot's enroot+caps package (pkg/deb/PACKAGE+caps.postinst runs the
# Makefile's setcap target's two commands): enroot-mksquashovlfs cap_sys_admin,
# enroot-aufs2ovlfs cap_sys_admin and cap_mknod, so a user's `docker://` import can convert
# layers (the risk: docs/security.md, "Container jobs").
make -C "$enroot" setcap DESTDIR="$destdir" "${enroot_layout[@]}"
