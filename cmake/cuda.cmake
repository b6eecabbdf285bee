# Finds what the CUDA engine needs (nvcc, the CUDA toolkit's cuBLAS/cuBLASLt, NCCL) and enables the
# CUDA language. Sets PIPETTE_CUDA_ENGINE ON and PIPETTE_CUDA_STATUS (what `pipette --version`
# says) when everything is there; with PIPETTE_WITH_CUDA=ON a missing piece is an error.
# Included from the top-level CMakeLists.txt when PIPETTE_WITH_CUDA is not OFF.
function(pipette_cuda_missing why)
  if(PIPETTE_WITH_CUDA STREQUAL "ON")
    message(FATAL_ERROR "pipette: -DPIPETTE_WITH_CUDA=ON but ${why} (backends/cuda/README.md)")
  endif()
  set(PIPETTE_CUDA_STATUS "not built: ${why} (backends/cuda/README.md says how to get it)"
      PARENT_SCOPE)
endfunction()

if(NOT CMAKE_CUDA_COMPILER AND EXISTS /usr/local/cuda/bin/nvcc)
  set(CMAKE_CUDA_COMPILER /usr/local/cuda/bin/nvcc)
endif()
include(CheckLanguage)
check_language(CUDA)
if(NOT CMAKE_CUDA_COMPILER)
  pipette_cuda_missing("nvcc not found")
  return()
endif()
# H100 and H200 (sm_90) unless the user asks for others.
if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES)
  set(CMAKE_CUDA_ARCHITECTURES 90)
endif()
enable_language(CUDA)
# C++17: CMake 3.25 knows no C++20 flag for nvcc ("CUDA20 ... not supported" at generate time).
set(CMAKE_CUDA_STANDARD 17)
set(CMAKE_CUDA_STANDARD_REQUIRED ON)
find_package(CUDAToolkit REQUIRED)
find_path(PIPETTE_NCCL_INCLUDE nccl.h HINTS ${CUDAToolkit_INCLUDE_DIRS} /usr/include)
find_library(PIPETTE_NCCL_LIBRARY nccl HINTS ${CUDAToolkit_LIBRARY_DIR} /usr/lib/x86_64-linux-gnu)
if(NOT PIPETTE_NCCL_INCLUDE OR NOT PIPETTE_NCCL_LIBRARY)
  pipette_cuda_missing("NCCL (nccl.h, libnccl) not found")
  return()
endif()
if(NOT TARGET CUDA::cublasLt)
  pipette_cuda_missing("cuBLASLt not found in the CUDA toolkit")
  return()
endif()
file(STRINGS ${PIPETTE_NCCL_INCLUDE}/nccl.h nccl_version_lines
     REGEX "^#define NCCL_(MAJOR|MINOR|PATCH) ")
string(REGEX REPLACE ".*NCCL_MAJOR ([0-9]+).*NCCL_MINOR ([0-9]+).*NCCL_PATCH ([0-9]+).*"
       "\\1.\\2.\\3" PIPETTE_NCCL_VERSION "${nccl_version_lines}")
add_library(pipette_nccl INTERFACE)
target_include_directories(pipette_nccl INTERFACE ${PIPETTE_NCCL_INCLUDE})
target_link_libraries(pipette_nccl INTERFACE ${PIPETTE_NCCL_LIBRARY})
set(PIPETTE_CUDA_ENGINE ON)
set(PIPETTE_CUDA_STATUS
    "built (CUDA ${CUDAToolkit_VERSION}, NCCL ${PIPETTE_NCCL_VERSION}, sm_${CMAKE_CUDA_ARCHITECTURES})")
