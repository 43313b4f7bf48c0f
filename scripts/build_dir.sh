# Sourced by the scripts: sets `build`, the build directory -- $AOTGRAD_BUILD_DIR, else build/ for
# libtorch 2.11 from the project's venv (AOTGRAD_TORCH=wheel, the default) or build-debian/ for
# Debian's libtorch 1.13 (AOTGRAD_TORCH=debian, until issue 41's step d removes it) -- and `torch`,
# the libtorch it builds against.
torch="${AOTGRAD_TORCH:-wheel}"
if [ "$torch" = wheel ]; then
  build="${AOTGRAD_BUILD_DIR:-$root/build}"
else
  build="${AOTGRAD_BUILD_DIR:-$root/build-$torch}"
fi
