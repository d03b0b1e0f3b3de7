# Every dependency comes from a Debian package (or the CUDA toolkit). Required ones stop the configure
# with the package name to install; optional ones switch a feature off and say so.
find_package(Threads REQUIRED)
find_package(PkgConfig REQUIRED)

find_package(PNG REQUIRED)            # libpng-dev
find_package(JPEG REQUIRED)           # libjpeg62-turbo-dev
find_package(CLI11 CONFIG REQUIRED)   # libcli11-dev
pkg_check_modules(HWY REQUIRED IMPORTED_TARGET libhwy)  # libhwy-dev
find_package(nlohmann_json CONFIG REQUIRED)  # nlohmann-json3-dev (batch pipeline files)
find_package(ZLIB REQUIRED)           # zlib1g-dev (libpng's own dependency; CRC-32 of batch outputs)

find_package(MPI COMPONENTS CXX)      # libopenmpi-dev (optional: `apron batch` across ranks)
set(APRON_HAVE_MPI ${MPI_CXX_FOUND})
message(STATUS "apron: MPI (batches across ranks) ${APRON_HAVE_MPI}")

# libfftw3-dev (optional: the CPU backend's FFT path; double transforms for exact plans, single for float ones)
pkg_check_modules(FFTW3 IMPORTED_TARGET fftw3 fftw3f)
set(APRON_HAVE_FFTW ${FFTW3_FOUND})
message(STATUS "apron: FFTW (CPU FFT convolution) ${APRON_HAVE_FFTW}")

find_package(TIFF)                    # libtiff-dev (optional: TIFF files)
set(APRON_HAVE_TIFF ${TIFF_FOUND})
message(STATUS "apron: TIFF support ${APRON_HAVE_TIFF}")

# CUDA toolkit: found => the CUDA backend builds (kernels need no GPU to compile).
set(APRON_HAVE_CUDA OFF)
if(NOT APRON_CUDA STREQUAL "OFF")
  include(CheckLanguage)
  check_language(CUDA)
  if(CMAKE_CUDA_COMPILER)
    if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES)
      set(CMAKE_CUDA_ARCHITECTURES 90)  # Hopper (H100/H200), the lent GPUs
    endif()
    enable_language(CUDA)
    # CMake before 3.26 does not know nvcc's C++20 flag; tell it (nvcc 12+ accepts -std=c++20).
    if(CMAKE_VERSION VERSION_LESS 3.26)
      set(CMAKE_CUDA20_STANDARD_COMPILE_OPTION "-std=c++20")
      set(CMAKE_CUDA20_EXTENSION_COMPILE_OPTION "-std=c++20")
      list(APPEND CMAKE_CUDA_COMPILE_FEATURES cuda_std_20)
    endif()
    set(CMAKE_CUDA_STANDARD 20)
    set(CMAKE_CUDA_STANDARD_REQUIRED ON)
    find_package(CUDAToolkit REQUIRED)
    set(APRON_HAVE_CUDA ON)
  elseif(APRON_CUDA STREQUAL "ON")
    message(FATAL_ERROR "APRON_CUDA=ON but no CUDA compiler was found")
  endif()
endif()
message(STATUS "apron: CUDA backend ${APRON_HAVE_CUDA}")
