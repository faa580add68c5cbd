# SPDX-License-Identifier: MIT
# Registers the ctest entries of a Boost.Test binary from its own test tree, at ctest time (a
# TEST_INCLUDE_FILES script, like gtest_discover_tests' PRE_TEST mode): a new suite or case gets its
# entry without a CMake edit. Reads `--list_content=DOT`, the one listing of Boost.Test 1.74 that
# shows labels (printed on stderr). Entries:
#  - one per top-level suite: `--run_test=SUITE --run_test=!@may_skip`, for the suites with at
#    least one case not labelled may_skip (Boost.Test applies every `!` filter after the selecting
#    ones, whatever the order; a filter that leaves nothing to run exits 200, so a suite that is
#    empty or has only may_skip cases gets no suite entry);
#  - one per case labelled may_skip, named SUITE/.../CASE, `--run_test=SUITE/.../CASE`, with
#    SKIP_REGULAR_EXPRESSION "LOADERLENS-SKIP: " (which wins over the exit status, hence entries of
#    their own: a skip then never hides another case's failure) and the ctest label may_skip.
# A suite or case labelled run_serial, or a suite in LOADERLENS_SERIAL_SUITES, runs alone.
#
# Expects: LOADERLENS_TEST_EXECUTABLE, LOADERLENS_TEST_WORKING_DIRECTORY, LOADERLENS_TEST_TIMEOUT,
# LOADERLENS_SERIAL_SUITES (a list), LOADERLENS_TEST_ARGS (a list, given to every entry),
# LOADERLENS_LONG_SUITES (a list) with LOADERLENS_LONG_TEST_TIMEOUT.

cmake_policy(VERSION 3.16) # IN_LIST; include() gives this file a policy scope of its own
set(_exe "${LOADERLENS_TEST_EXECUTABLE}")

# A failing entry that says what went wrong: a binary that cannot be listed must not pass as "no
# tests".
macro(_loaderlens_discovery_failed message)
  get_filename_component(_binary_name "${_exe}" NAME)
  add_test("${_binary_name}_discovery" /bin/sh -c "echo \"$0\"; exit 1" "${message}")
  return()
endmacro()

if(NOT EXISTS "${_exe}")
  _loaderlens_discovery_failed("${_exe} is not built: run cmake --build first")
endif()
execute_process(COMMAND "${_exe}" --list_content=DOT
                OUTPUT_VARIABLE _out ERROR_VARIABLE _dot RESULT_VARIABLE _rc TIMEOUT 120)
if(NOT _rc EQUAL 0)
  _loaderlens_discovery_failed("${_exe} --list_content=DOT exited with ${_rc}: ${_out}${_dot}")
endif()

# Nodes: tuID[...,label="NAME|FILE(LINE)[|timeout=..][|labels: @a @b]"]; edges: tuA -> tuB;
# Case ids have bits above 0xFFFF (Boost.Test's TUT_CASE encoding), suites do not.
string(REPLACE ";" "\\;" _dot "${_dot}")
string(REPLACE "\n" ";" _lines "${_dot}")
set(_master "")
set(_nodes "")
foreach(_line IN LISTS _lines)
  if(_line MATCHES "^tu([0-9]+)\\[(.*)label=\"([^|\"]*)([^\"]*)\"\\]")
    set(_id "${CMAKE_MATCH_1}")
    set(_attributes "${CMAKE_MATCH_2}")
    set(_name_${_id} "${CMAKE_MATCH_3}")
    set(_rest "${CMAKE_MATCH_4}")
    set(_labels_${_id} "")
    if(_rest MATCHES "labels:([^|]*)")
      string(REGEX MATCHALL "@[^ ]+" _labels "${CMAKE_MATCH_1}")
      string(REPLACE "@" "" _labels "${_labels}")
      set(_labels_${_id} "${_labels}")
    endif()
    if(_attributes MATCHES "shape=ellipse")
      set(_master "${_id}")
    else()
      list(APPEND _nodes "${_id}")
    endif()
  elseif(_line MATCHES "^tu([0-9]+) -> tu([0-9]+);")
    set(_parent_${CMAKE_MATCH_2} "${CMAKE_MATCH_1}")
  endif()
endforeach()
if(_master STREQUAL "")
  _loaderlens_discovery_failed("no test module in the output of ${_exe} --list_content=DOT")
endif()

# Per case: its path (SUITE/.../CASE), its top-level suite, whether it runs alone.
set(_suites "")
foreach(_id IN LISTS _nodes)
  if(_parent_${_id} STREQUAL _master)
    list(APPEND _suites "${_id}")
    set(_plain_cases_${_id} 0)
  endif()
endforeach()
set(_may_skip_cases "")
foreach(_id IN LISTS _nodes)
  if(_id LESS 65536)
    continue()
  endif()
  set(_path "${_name_${_id}}")
  set(_serial FALSE)
  set(_may_skip FALSE)
  if("may_skip" IN_LIST _labels_${_id})
    set(_may_skip TRUE)
  endif()
  if("run_serial" IN_LIST _labels_${_id})
    set(_serial TRUE)
  endif()
  set(_up "${_parent_${_id}}")
  set(_top "")
  while(NOT _up STREQUAL "" AND NOT _up STREQUAL _master)
    set(_path "${_name_${_up}}/${_path}")
    if("run_serial" IN_LIST _labels_${_up})
      set(_serial TRUE)
    endif()
    set(_top "${_up}")
    set(_up "${_parent_${_up}}")
  endwhile()
  if(_top STREQUAL "") # a case at the top level, outside any suite
    set(_may_skip TRUE) # gets an entry of its own
  else()
    if("${_name_${_top}}" IN_LIST LOADERLENS_SERIAL_SUITES OR "run_serial" IN_LIST _labels_${_top})
      set(_serial TRUE)
    endif()
  endif()
  if(_may_skip)
    list(APPEND _may_skip_cases "${_id}")
    set(_case_path_${_id} "${_path}")
    set(_case_serial_${_id} ${_serial})
  else()
    math(EXPR _plain_cases_${_top} "${_plain_cases_${_top}} + 1")
  endif()
endforeach()

function(_loaderlens_add name serial)
  add_test("${name}" "${_exe}" ${ARGN} ${LOADERLENS_TEST_ARGS})
  set_tests_properties("${name}" PROPERTIES
                       WORKING_DIRECTORY "${LOADERLENS_TEST_WORKING_DIRECTORY}"
                       TIMEOUT "${LOADERLENS_TEST_TIMEOUT}")
  if(serial)
    set_tests_properties("${name}" PROPERTIES RUN_SERIAL TRUE)
  endif()
  if(name IN_LIST LOADERLENS_LONG_SUITES)
    set_tests_properties("${name}" PROPERTIES TIMEOUT "${LOADERLENS_LONG_TEST_TIMEOUT}")
  endif()
endfunction()

foreach(_id IN LISTS _suites)
  if(_plain_cases_${_id} EQUAL 0)
    continue() # empty, or every case has an entry of its own
  endif()
  set(_name "${_name_${_id}}")
  set(_serial FALSE)
  if(_name IN_LIST LOADERLENS_SERIAL_SUITES OR "run_serial" IN_LIST _labels_${_id})
    set(_serial TRUE)
  endif()
  _loaderlens_add("${_name}" ${_serial} "--run_test=${_name}" "--run_test=!@may_skip")
endforeach()
foreach(_id IN LISTS _may_skip_cases)
  _loaderlens_add("${_case_path_${_id}}" ${_case_serial_${_id}} "--run_test=${_case_path_${_id}}")
  set_tests_properties("${_case_path_${_id}}" PROPERTIES
                       SKIP_REGULAR_EXPRESSION "LOADERLENS-SKIP: " LABELS may_skip)
endforeach()
