# The imported targets of libtorch from PyTorch's wheel -- c10, torch_cpu and `torch` -- under
# AOTGRAD_TORCH_ROOT (the wheel's torch/ directory). Included by cmake/torch_wheel.cmake when aotgrad
# builds, and by the installed aotgradConfig.cmake, so that a consumer of an aotgrad built on the
# wheel links the same libtorch (find_package(Torch) would find another: cmake/torch_wheel.cmake).
if(TARGET torch)
  return()
endif()
foreach(lib c10 torch_cpu)
  if(NOT EXISTS "${AOTGRAD_TORCH_ROOT}/lib/lib${lib}.so")
    message(FATAL_ERROR "${AOTGRAD_TORCH_ROOT}/lib/lib${lib}.so is missing")
  endif()
endforeach()

add_library(c10 SHARED IMPORTED)
set_target_properties(c10 PROPERTIES
  IMPORTED_LOCATION "${AOTGRAD_TORCH_ROOT}/lib/libc10.so"
  INTERFACE_INCLUDE_DIRECTORIES "${AOTGRAD_TORCH_ROOT}/include"
  INTERFACE_COMPILE_DEFINITIONS "_GLIBCXX_USE_CXX11_ABI=${AOTGRAD_TORCH_CXX11_ABI}")

# USE_DISTRIBUTED and USE_C10D_GLOO as the wheel was built: c10d's headers declare the Gloo
# backend only under them.
add_library(torch_cpu SHARED IMPORTED)
set_target_properties(torch_cpu PROPERTIES
  IMPORTED_LOCATION "${AOTGRAD_TORCH_ROOT}/lib/libtorch_cpu.so"
  INTERFACE_INCLUDE_DIRECTORIES
    "${AOTGRAD_TORCH_ROOT}/include;${AOTGRAD_TORCH_ROOT}/include/torch/csrc/api/include"
  INTERFACE_COMPILE_DEFINITIONS "USE_DISTRIBUTED;USE_C10D_GLOO"
  INTERFACE_LINK_LIBRARIES c10)

add_library(torch INTERFACE IMPORTED)
set_target_properties(torch PROPERTIES INTERFACE_LINK_LIBRARIES torch_cpu)
