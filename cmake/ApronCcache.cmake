# ccache, where it is installed, in front of every compiler (C, C++ and nvcc): a rebuild, another build
# directory of the same sources (CI's Release build, then `pip wheel .`) or a fresh clone of them compiles
# only what changed. A launcher the user chose (-DCMAKE_CXX_COMPILER_LAUNCHER=..., or the environment
# variable of that name) is kept; an empty one (-DCMAKE_CXX_COMPILER_LAUNCHER=) or -DAPRON_CCACHE=OFF turns
# it off.
option(APRON_CCACHE "Compile through ccache where it is installed" ON)
if(APRON_CCACHE)
  find_program(APRON_CCACHE_PROGRAM ccache)
  if(APRON_CCACHE_PROGRAM)
    foreach(lang C CXX CUDA)
      if(NOT DEFINED CMAKE_${lang}_COMPILER_LAUNCHER AND NOT DEFINED ENV{CMAKE_${lang}_COMPILER_LAUNCHER})
        set(CMAKE_${lang}_COMPILER_LAUNCHER ${APRON_CCACHE_PROGRAM})
      endif()
    endforeach()
    message(STATUS "apron: compiling through ${APRON_CCACHE_PROGRAM}")
  endif()
endif()
