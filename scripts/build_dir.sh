# Sourced by the scripts: sets `build`, the build directory -- $AOTGRAD_BUILD_DIR, else build/ for
# Debian's libtorch 1.13 (AOTGRAD_TORCH=debian, the default) or build-wheel/ for libtorch 2.11 from
# the project's venv (AOTGRAD_TORCH=wheel) -- and `torch`, the libtorch it builds against.
torch="${AOTGRAD_TORCH:-debian}"
if [ "$torch" = debian ]; then
  build="${AOTGRAD_BUILD_DIR:-$root/build}"
else
  build="${AOTGRAD_BUILD_DIR:-$root/build-$torch}"
fi
