# libtorch from PyTorch's wheel: the `torch` package installed into the
# project's own venv by scripts/setup.sh (torch==2.11.*), found through the venv's Python by
# torch.utils.cmake_prefix_path, as PyTorch documents for C++ extensions.
#
# Defines the imported targets aotgrad links -- c10, torch_cpu and `torch`, the name the exported
# targets and aotgradConfig.cmake use -- itself rather than through find_package(Torch), for two
# reasons (Note [libtorch from the wheel] in DESIGN terms: aotgrad links libtorch's CPU half):
# - the wheel is CUDA-enabled, and its TorchConfig.cmake requires a CUDA toolkit of a matching
#   version (pytorch#73427) and links libtorch_cuda and the CUDA libraries into every program, which
#   costs every process that loads libtorch the CUDA runtime's start-up, though aotgrad compiles no
#   CUDA code and its CPU tests run none;
# - its find_library calls search the system's paths before the wheel's, so on a machine that also
#   has Debian's libtorch-dev they pick Debian's libtorch.so and libc10.so (1.13) beside the
#   wheel's headers.
# Here `torch` is libtorch_cpu and libc10 from the wheel's lib/ only.

set(AOTGRAD_TORCH_MIN_VERSION 2.11)
set(AOTGRAD_TORCH_TESTED_VERSION 2.11.0)

set(AOTGRAD_PYTHON "${CMAKE_CURRENT_SOURCE_DIR}/.venv/bin/python" CACHE FILEPATH
  "The Python whose torch package provides libtorch")
if(NOT EXISTS "${AOTGRAD_PYTHON}")
  message(FATAL_ERROR "no Python at ${AOTGRAD_PYTHON} -- run "
    "scripts/setup.sh, which installs torch==2.11.* into the project's venv (.venv), or set "
    "AOTGRAD_PYTHON to a Python that has torch")
endif()
execute_process(
  COMMAND "${AOTGRAD_PYTHON}" -c
    "import torch, torch.utils; print(torch.utils.cmake_prefix_path); print(torch.__version__.split('+')[0]); print(int(torch._C._GLIBCXX_USE_CXX11_ABI))"
  OUTPUT_VARIABLE torch_probe ERROR_VARIABLE torch_probe_error RESULT_VARIABLE torch_probe_rc
  OUTPUT_STRIP_TRAILING_WHITESPACE)
if(NOT torch_probe_rc EQUAL 0)
  message(FATAL_ERROR "${AOTGRAD_PYTHON} cannot import torch "
    "(run scripts/setup.sh):\n${torch_probe_error}")
endif()
string(REPLACE "\n" ";" torch_probe "${torch_probe}")
list(GET torch_probe 0 torch_cmake_prefix)
list(GET torch_probe 1 AOTGRAD_TORCH_VERSION)
list(GET torch_probe 2 AOTGRAD_TORCH_CXX11_ABI)
get_filename_component(AOTGRAD_TORCH_ROOT "${torch_cmake_prefix}/../.." ABSOLUTE)

if(AOTGRAD_TORCH_VERSION VERSION_LESS AOTGRAD_TORCH_MIN_VERSION)
  message(FATAL_ERROR "libtorch ${AOTGRAD_TORCH_VERSION} (${AOTGRAD_TORCH_ROOT}) is older than "
    "aotgrad supports: it needs libtorch ${AOTGRAD_TORCH_MIN_VERSION} or newer (tested with "
    "${AOTGRAD_TORCH_TESTED_VERSION}); scripts/setup.sh installs torch==2.11.*")
endif()
message(STATUS "libtorch ${AOTGRAD_TORCH_VERSION} from PyPI's wheel: ${AOTGRAD_TORCH_ROOT}")

include(${CMAKE_CURRENT_LIST_DIR}/torch_wheel_targets.cmake)

# The tag table's generator reads the wheel's own native_functions.yaml (torchgen ships it).
set(AOTGRAD_NATIVE_FUNCTIONS_YAML_DEFAULT
  "${AOTGRAD_TORCH_ROOT}/../torchgen/packaged/ATen/native/native_functions.yaml")
