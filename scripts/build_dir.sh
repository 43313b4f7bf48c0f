# Sourced by the scripts: sets `build`, the build directory -- $AOTGRAD_BUILD_DIR, else build/.
build="${AOTGRAD_BUILD_DIR:-$root/build}"
