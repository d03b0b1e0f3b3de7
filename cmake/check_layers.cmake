# The layer check: every `#include "LAYER/..."` in src/<layer>/ must name the layer itself or one it
# depends on (APRON_LAYER_DEPENDS_<layer>, followed transitively). Anything else fails with the file, the
# line and the allowed layers, so an upward include (a cycle in the making) stops the configure.
#
# Used from src/CMakeLists.txt: at configure time (apron_check_layers), and again at build time whenever a
# file of src/ changes (the target apron_layer_check, which libapron depends on). As a script:
#   cmake -DAPRON_LAYER_SRC=<dir> -P cmake/check_layers.cmake
# where <dir> holds the layer folders; the script then uses apron's own graph (read from src/CMakeLists.txt).
cmake_policy(VERSION 3.25)  # IN_LIST, also when run as a script

function(apron_layer_closure layer out)
  set(seen "")
  set(todo ${APRON_LAYER_DEPENDS_${layer}})
  while(todo)
    list(POP_FRONT todo dep)
    if(NOT dep IN_LIST seen)
      list(APPEND seen ${dep})
      list(APPEND todo ${APRON_LAYER_DEPENDS_${dep}})
    endif()
  endwhile()
  set(${out} ${seen} PARENT_SCOPE)
endfunction()

function(apron_check_layers src_dir)
  set(problems "")
  foreach(layer IN LISTS APRON_LAYERS)
    apron_layer_closure(${layer} allowed)
    file(GLOB_RECURSE files ${src_dir}/${layer}/*.cpp ${src_dir}/${layer}/*.hpp ${src_dir}/${layer}/*.cu
         ${src_dir}/${layer}/*.cuh ${src_dir}/${layer}/*.h)
    foreach(file IN LISTS files)
      file(STRINGS ${file} includes REGEX "^[ \t]*#[ \t]*include[ \t]*\"[a-z_]+/")
      foreach(line IN LISTS includes)
        string(REGEX MATCH "\"([a-z_]+)/" _ "${line}")
        set(target ${CMAKE_MATCH_1})
        if(target STREQUAL layer OR target STREQUAL "apron" OR target IN_LIST allowed OR NOT target IN_LIST APRON_LAYERS)
          continue()
        endif()
        file(RELATIVE_PATH rel ${src_dir} ${file})
        string(STRIP "${line}" line)
        string(REPLACE ";" " " allowed_text "${allowed}")
        if(NOT allowed_text)
          set(allowed_text "none")
        endif()
        string(APPEND problems "\n  src/${rel}: ${line}: the ${layer} layer may not include ${target} (it may include: ${allowed_text})")
      endforeach()
    endforeach()
  endforeach()
  if(problems)
    message(FATAL_ERROR "apron: layer check failed (see src/CMakeLists.txt for the layer graph):${problems}")
  endif()
endfunction()

# Script mode: the graph from src/CMakeLists.txt (its APRON_LAYERS / APRON_LAYER_DEPENDS_* lines).
if(CMAKE_SCRIPT_MODE_FILE AND CMAKE_SCRIPT_MODE_FILE STREQUAL CMAKE_CURRENT_LIST_FILE)
  if(NOT APRON_LAYER_SRC)
    message(FATAL_ERROR "usage: cmake -DAPRON_LAYER_SRC=<dir with the layer folders> -P check_layers.cmake")
  endif()
  file(STRINGS ${CMAKE_CURRENT_LIST_DIR}/../src/CMakeLists.txt graph REGEX "^set\\(APRON_LAYER")
  foreach(line IN LISTS graph)
    string(REGEX MATCH "^set\\((APRON_LAYER[A-Za-z_]*)([^)]*)\\)" _ "${line}")
    string(STRIP "${CMAKE_MATCH_2}" values)
    string(REPLACE "\"\"" "" values "${values}")
    string(REPLACE " " ";" values "${values}")
    set(${CMAKE_MATCH_1} ${values})
  endforeach()
  apron_check_layers(${APRON_LAYER_SRC})
  message(STATUS "apron: layer check passed")
endif()
