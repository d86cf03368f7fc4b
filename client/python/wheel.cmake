# The wheel: the same module built for STRATA_WHEEL_PYTHON (any CPython 3.9+
# with its headers; pybind11's headers work with each), packed with the
# pure-Python files by make_wheel.py into ${CMAKE_CURRENT_BINARY_DIR}/dist.
# Included from CMakeLists.txt once _strata exists.
set(STRATA_WHEEL_PYTHON "" CACHE FILEPATH
    "Interpreter to build the strata wheel for (default: python3 on PATH when it is not STRATA_PYTHON; OFF: none)")
set(wheel_python "${STRATA_WHEEL_PYTHON}")
if(wheel_python STREQUAL "")
  find_program(path_python3 python3 NO_CACHE)
  set(wheel_python "${path_python3}")
endif()
if(wheel_python STREQUAL "" OR wheel_python STREQUAL "OFF")
  return()
endif()

# Its headers, extension suffix and real path (a pyenv shim resolves here).
execute_process(
  COMMAND ${wheel_python} -c
    "import sys, sysconfig; print(sysconfig.get_paths()['include']); print(sysconfig.get_config_var('EXT_SUFFIX')); print(sys.executable); print('%d.%d' % sys.version_info[:2])"
  OUTPUT_VARIABLE wheel_info RESULT_VARIABLE wheel_rc OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
if(NOT wheel_rc EQUAL 0)
  message(STATUS "strata: ${wheel_python} does not run; no wheel")
  return()
endif()
string(REPLACE "\n" ";" wheel_info "${wheel_info}")
list(GET wheel_info 0 wheel_include)
list(GET wheel_info 1 wheel_suffix)
list(GET wheel_info 2 wheel_exe)
list(GET wheel_info 3 wheel_version)
if(wheel_version VERSION_LESS 3.9 OR NOT EXISTS "${wheel_include}/Python.h")
  message(STATUS "strata: ${wheel_exe} (${wheel_version}) is not a CPython 3.9+ with headers; no wheel")
  return()
endif()
message(STATUS "strata: wheel for ${wheel_exe} (${wheel_version})")

set(wheel_package ${CMAKE_CURRENT_BINARY_DIR}/wheel/strata)
add_library(strata_wheel_module MODULE ${STRATA_PY_SOURCES})
target_include_directories(strata_wheel_module SYSTEM PRIVATE ${wheel_include})
target_link_libraries(strata_wheel_module PRIVATE strata_client pybind11::headers)
strata_warnings(strata_wheel_module)
set_target_properties(strata_wheel_module PROPERTIES
  OUTPUT_NAME _strata PREFIX "" SUFFIX "${wheel_suffix}"
  LIBRARY_OUTPUT_DIRECTORY ${wheel_package}
  CXX_VISIBILITY_PRESET hidden VISIBILITY_INLINES_HIDDEN ON)

set(wheel_stamp ${CMAKE_CURRENT_BINARY_DIR}/dist/.strata-wheel-${wheel_version})
set(wheel_sources)
foreach(py ${STRATA_PY_FILES})
  list(APPEND wheel_sources ${CMAKE_CURRENT_SOURCE_DIR}/strata/${py})
endforeach()
add_custom_command(OUTPUT ${wheel_stamp}
  COMMAND ${Python_EXECUTABLE} ${CMAKE_CURRENT_SOURCE_DIR}/make_wheel.py
    --python ${wheel_exe} --module $<TARGET_FILE:strata_wheel_module> --version ${PROJECT_VERSION}
    --out ${CMAKE_CURRENT_BINARY_DIR}/dist ${wheel_sources}
  COMMAND ${CMAKE_COMMAND} -E touch ${wheel_stamp}
  DEPENDS strata_wheel_module ${CMAKE_CURRENT_SOURCE_DIR}/make_wheel.py ${wheel_sources}
  COMMENT "strata: packing the wheel for Python ${wheel_version}")
add_custom_target(strata_wheel ALL DEPENDS ${wheel_stamp})
set_property(GLOBAL PROPERTY STRATA_WHEEL_PYTHON ${wheel_exe})
set_property(GLOBAL PROPERTY STRATA_WHEEL_DIR ${CMAKE_CURRENT_BINARY_DIR}/dist)
