# What `cmake --install` puts under the prefix besides the apron binary (tools/):
#   lib/libapron.so.X.Y.Z, lib/libapron.a        the library, shared and static, from the same objects
#   include/apron/*.hpp                          the public API (only the standard library and each other)
#   lib/cmake/apron/apronConfig*.cmake           find_package(apron): apron::apron (shared), apron::apron_static
#   lib/pkgconfig/apron.pc                       pkg-config --cflags --libs apron [--static]
# tests/consumer/ builds a program against an installed copy (CTest: package_consumer).
# Install components: `runtime` (libapron.so.*) and `development` (the rest), so that a build that installs
# something else (a Python wheel) can leave them out: cmake --install build --component NAME.
include(CMakePackageConfigHelpers)

set(APRON_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/apron)

install(TARGETS libapron_shared libapron EXPORT apronTargets
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT runtime NAMELINK_COMPONENT development
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT development)
install(DIRECTORY ${PROJECT_SOURCE_DIR}/include/apron DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}
  COMPONENT development FILES_MATCHING PATTERN "*.hpp")
install(EXPORT apronTargets NAMESPACE apron:: DESTINATION ${APRON_CMAKE_DIR} COMPONENT development)

# Compatibility follows the SOVERSION (src/CMakeLists.txt): while the version is 0.x a minor release may
# break the API, so find_package(apron 0.1) accepts 0.1.* only; from 1.0 on, any newer release of the same
# major version.
if(PROJECT_VERSION_MAJOR EQUAL 0)
  set(APRON_COMPATIBILITY SameMinorVersion)
else()
  set(APRON_COMPATIBILITY SameMajorVersion)
endif()
write_basic_package_version_file(${CMAKE_CURRENT_BINARY_DIR}/apronConfigVersion.cmake
  VERSION ${PROJECT_VERSION} COMPATIBILITY ${APRON_COMPATIBILITY})

# The toolkit this build linked, as the consumer's default (a consumer with the CUDA language enabled, or
# CUDAToolkit_ROOT set, keeps its own).
set(APRON_CUDA_TOOLKIT_ROOT "")
if(APRON_HAVE_CUDA)
  get_filename_component(APRON_CUDA_TOOLKIT_ROOT ${CUDAToolkit_BIN_DIR} DIRECTORY)
endif()
foreach(feature CUDA MPI FFTW TIFF FITS)  # ON/OFF in apronConfig.cmake (FFTW3_FOUND may be 1 or empty)
  if(APRON_HAVE_${feature})
    set(APRON_PACKAGE_HAVE_${feature} ON)
  else()
    set(APRON_PACKAGE_HAVE_${feature} OFF)
  endif()
endforeach()
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/apronConfig.cmake.in
  ${CMAKE_CURRENT_BINARY_DIR}/apronConfig.cmake INSTALL_DESTINATION ${APRON_CMAKE_DIR})
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/apronConfig.cmake ${CMAKE_CURRENT_BINARY_DIR}/apronConfigVersion.cmake
  DESTINATION ${APRON_CMAKE_DIR} COMPONENT development)

# pkg-config: Libs is the shared library; a static link adds Requires.private (the dependencies that have
# .pc files) and Libs.private (the others). The file is written at install time, so that its prefix is the
# one installed to (`cmake --install build --prefix DIR` included).
set(APRON_PC_REQUIRES "libpng libjpeg zlib libhwy")
if(APRON_HAVE_TIFF)
  string(APPEND APRON_PC_REQUIRES " libtiff-4")
endif()
if(APRON_HAVE_FFTW)
  string(APPEND APRON_PC_REQUIRES " fftw3 fftw3f")
endif()
set(APRON_PC_LIBS "-pthread")
# cfitsio by its library, not Requires.private: its .pc lists libcurl among its own private libraries, which a
# static link of apron then demands though only cfitsio's shared library (which carries it) is linked.
if(APRON_HAVE_FITS)
  string(APPEND APRON_PC_LIBS " -lcfitsio")
endif()
foreach(lib IN LISTS CMAKE_DL_LIBS)
  string(APPEND APRON_PC_LIBS " -l${lib}")
endforeach()
if(APRON_HAVE_CUDA)
  string(APPEND APRON_PC_LIBS " -L${CUDAToolkit_LIBRARY_DIR} -lcudart -lcufft")
endif()
if(APRON_HAVE_NVJPEG)
  string(APPEND APRON_PC_LIBS " -lnvjpeg")
endif()
if(APRON_HAVE_MPI)
  foreach(lib IN LISTS MPI_CXX_LIBRARIES)
    string(APPEND APRON_PC_LIBS " ${lib}")
  endforeach()
endif()
foreach(dir LIBDIR INCLUDEDIR)
  if(IS_ABSOLUTE ${CMAKE_INSTALL_${dir}})
    set(APRON_PC_${dir} ${CMAKE_INSTALL_${dir}})
  else()
    set(APRON_PC_${dir} "\${prefix}/${CMAKE_INSTALL_${dir}}")
  endif()
endforeach()
set(APRON_PC_PREFIX "@APRON_PC_PREFIX@")  # kept for the install-time pass
configure_file(${PROJECT_SOURCE_DIR}/cmake/apron.pc.in ${CMAKE_CURRENT_BINARY_DIR}/apron.pc.in @ONLY)
install(CODE "
  set(APRON_PC_PREFIX \"\${CMAKE_INSTALL_PREFIX}\")
  configure_file(\"${CMAKE_CURRENT_BINARY_DIR}/apron.pc.in\" \"${CMAKE_CURRENT_BINARY_DIR}/apron.pc\" @ONLY)"
  COMPONENT development)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/apron.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig
  COMPONENT development)
