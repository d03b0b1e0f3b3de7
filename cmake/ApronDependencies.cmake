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

pkg_check_modules(CFITSIO IMPORTED_TARGET cfitsio)  # libcfitsio-dev (optional: FITS images and cubes)
if(CFITSIO_FOUND)
  set(APRON_HAVE_FITS ON)
else()
  set(APRON_HAVE_FITS OFF)
endif()
message(STATUS "apron: FITS support ${APRON_HAVE_FITS}")

# The CUDA backend. ON builds it wherever the toolkit is (the kernels need no GPU to compile: CI checks them
# so); OFF never; AUTO, the default, only where a GPU is found as well, because its 67 translation units are
# most of a build (2,458 s of CPU for sm_90, against 159 s for the quick start's CPU build) and give nothing
# where no GPU can run them.
# AUTO, ON or OFF from an AUTO/ON/OFF option's value, whatever CMake spelling of true or false it was given.
function(apron_tristate value out)
  string(TOUPPER "${value}" v)
  if(NOT v STREQUAL "AUTO")
    if(v)  # ON, TRUE, YES, 1, ...
      set(v ON)
    else()
      set(v OFF)
    endif()
  endif()
  set(${out} ${v} PARENT_SCOPE)
endfunction()
apron_tristate("${APRON_CUDA}" apron_cuda_asked)

# A GPU is there when nvidia-smi lists one or, without nvidia-smi (a container given only the device
# files), when /dev/nvidia0 exists. Sets ${found} to ON or OFF and ${what} to its name or why not.
function(apron_find_gpu found what)
  find_program(apron_nvidia_smi nvidia-smi PATHS /usr/lib/wsl/lib NO_CACHE)
  if(apron_nvidia_smi)
    execute_process(COMMAND ${apron_nvidia_smi} -L OUTPUT_VARIABLE gpus RESULT_VARIABLE failed
                    ERROR_QUIET TIMEOUT 30)
    if(NOT failed AND gpus MATCHES "GPU [0-9]+: ([^\n(]*[^\n( ])")
      set(${found} ON PARENT_SCOPE)
      set(${what} "GPU found: ${CMAKE_MATCH_1}" PARENT_SCOPE)
      return()
    endif()
    set(${what} "no GPU: nvidia-smi -L lists none" PARENT_SCOPE)
  elseif(EXISTS /dev/nvidia0)
    set(${found} ON PARENT_SCOPE)
    set(${what} "GPU found: /dev/nvidia0" PARENT_SCOPE)
    return()
  else()
    set(${what} "no GPU" PARENT_SCOPE)
  endif()
  set(${found} OFF PARENT_SCOPE)
endfunction()

set(APRON_HAVE_CUDA OFF)
set(apron_cuda_why "APRON_CUDA=OFF")
set(apron_cuda_try OFF)
if(apron_cuda_asked STREQUAL "ON")
  set(apron_cuda_try ON)
  set(apron_cuda_why "APRON_CUDA=ON")
elseif(apron_cuda_asked STREQUAL "AUTO")
  apron_find_gpu(apron_cuda_try apron_cuda_why)
  if(NOT apron_cuda_try)
    # Only to say whether -DAPRON_CUDA=ON would build it (check_language costs a test project).
    find_program(apron_nvcc nvcc PATHS /usr/local/cuda/bin NO_CACHE)
    if(CMAKE_CUDA_COMPILER OR DEFINED ENV{CUDACXX} OR apron_nvcc)
      set(apron_cuda_why "toolkit found, ${apron_cuda_why}; -DAPRON_CUDA=ON to build it")
    else()
      set(apron_cuda_why "${apron_cuda_why}, no CUDA toolkit")
    endif()
  endif()
endif()
if(apron_cuda_try)
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
    set(apron_cuda_why "${apron_cuda_why}; nvcc ${CMAKE_CUDA_COMPILER_VERSION}, architectures ${CMAKE_CUDA_ARCHITECTURES}")
  elseif(apron_cuda_asked STREQUAL "ON")
    message(FATAL_ERROR "APRON_CUDA=ON but no CUDA compiler was found (install the CUDA toolkit, or set CUDACXX)")
  else()
    set(apron_cuda_why "${apron_cuda_why}, but no CUDA toolkit")
  endif()
endif()
message(STATUS "apron: CUDA backend ${APRON_HAVE_CUDA} (${apron_cuda_why})")
set(APRON_CUDA_BUILT ${APRON_HAVE_CUDA} CACHE INTERNAL "The CUDA backend is built (scripts/test.sh reads it)")
set(APRON_CUDA_WHY "${apron_cuda_why}")  # for `apron info` (src/run/no_cuda.cpp)

# nvJPEG, the CUDA toolkit's JPEG decoder: `apron batch` decodes JPEG inputs on the GPU with it
# (src/cuda/gpu_jpeg.cu: the hardware decoder where the GPU has one) and the rest on the CPU. AUTO, the
# default, builds it with the CUDA backend where the toolkit has nvJPEG with interpolated chroma upsampling
# (12.1 on: libjpeg-turbo's pixels within a few levels); ON insists; OFF leaves it out, and a stub
# (gpu_jpeg_stub.cpp) says so.
set(APRON_NVJPEG AUTO CACHE STRING
    "Decode the JPEG inputs of batches on the GPU with nvJPEG: AUTO (with the CUDA backend, where the toolkit has it), ON or OFF")
set_property(CACHE APRON_NVJPEG PROPERTY STRINGS AUTO ON OFF)
apron_tristate("${APRON_NVJPEG}" apron_nvjpeg_asked)
set(APRON_HAVE_NVJPEG OFF)
if(apron_nvjpeg_asked STREQUAL "OFF")
  set(apron_nvjpeg_why "APRON_NVJPEG=OFF")
elseif(NOT APRON_HAVE_CUDA)
  set(apron_nvjpeg_why "no CUDA backend")
elseif(NOT TARGET CUDA::nvjpeg)
  set(apron_nvjpeg_why "the CUDA toolkit has no nvJPEG library")
else()
  find_file(apron_nvjpeg_header nvjpeg.h PATHS ${CUDAToolkit_INCLUDE_DIRS} ${CUDAToolkit_MATH_INCLUDE_DIR}
            NO_DEFAULT_PATH NO_CACHE)
  if(NOT apron_nvjpeg_header)
    set(apron_nvjpeg_why "the CUDA toolkit has libnvjpeg but not nvjpeg.h")
  else()
    file(STRINGS "${apron_nvjpeg_header}" apron_nvjpeg_interpolates REGEX "NVJPEG_FLAGS_UPSAMPLING_WITH_INTERPOLATION")
    if(NOT apron_nvjpeg_interpolates)
      set(apron_nvjpeg_why "nvJPEG older than 12.1 (no NVJPEG_FLAGS_UPSAMPLING_WITH_INTERPOLATION)")
    else()
      set(APRON_HAVE_NVJPEG ON)
      set(apron_nvjpeg_why "${apron_nvjpeg_header}")
    endif()
  endif()
endif()
if(apron_nvjpeg_asked STREQUAL "ON" AND NOT APRON_HAVE_NVJPEG)
  message(FATAL_ERROR "APRON_NVJPEG=ON but nvJPEG cannot be built: ${apron_nvjpeg_why}")
endif()
message(STATUS "apron: nvJPEG (GPU JPEG decoding in batches) ${APRON_HAVE_NVJPEG} (${apron_nvjpeg_why})")
