# SPDX-License-Identifier: MIT
# One man page from a command's --help (cmake -P; the rules are in cmake/manpages.cmake):
#   -DPROGRAM=build/cli/loaderlens -DSUBCOMMAND="record" -DPAGE=loaderlens-record -DVERSION=0.1.0
#   -DHELP2MAN=/usr/bin/help2man -DOUTPUT=DIR/loaderlens-record.1 [-DEXAMPLES="a;b"] [-DSEE_ALSO="x;y"]
# help2man fills the "Examples:" block of --help into one paragraph, so the examples are given
# to it again as lines (an include file's [=EXAMPLES]), with the text after them.
cmake_minimum_required(VERSION 3.25)

separate_arguments(command_words UNIX_COMMAND "${SUBCOMMAND}")
execute_process(COMMAND ${CMAKE_COMMAND} -E env COLUMNS=80 ${PROGRAM} ${command_words} --help
                OUTPUT_VARIABLE help RESULT_VARIABLE status)
if(NOT status EQUAL 0)
  message(FATAL_ERROR "${PROGRAM} ${SUBCOMMAND} --help: exit ${status}")
endif()

# A CMake list splits at ';' but not inside square brackets: an unbalanced "]" (record's
# "--subset ... (in (0, 1])") kept the rest of a page as one element. So brackets are replaced by
# placeholders before a text is split into lines, and put back by roff_line.
function(help_lines text out)
  string(REPLACE "[" "@LL_OPEN@" text "${text}")
  string(REPLACE "]" "@LL_CLOSE@" text "${text}")
  string(REPLACE ";" "\\;" text "${text}")
  string(REPLACE "\n" ";" text "${text}")
  set(${out} "${text}" PARENT_SCOPE)
endfunction()

# roff: a line may not start with '.' or '\'', and a backslash is an escape. help2man also takes a
# line of its include file that starts with '[' for a section's name ("[Option Group: Sampling]").
function(roff_line text out)
  string(REPLACE "@LL_OPEN@" "[" text "${text}")
  string(REPLACE "@LL_CLOSE@" "]" text "${text}")
  string(REPLACE "\\" "\\e" text "${text}")
  # A real minus, so that a copied example works.
  string(REPLACE "-" "\\-" text "${text}")
  if(text MATCHES "^[.'[]")
    set(text "\\&${text}")
  endif()
  set(${out} "${text}" PARENT_SCOPE)
endfunction()

# The NAME line: the description, the help's lines before "Usage:".
string(REGEX REPLACE "\nUsage:.*" "" description "${help}")
# Qt's pages (loaderlens-gui) put it after the usage line instead.
if(description MATCHES "^Usage:")
  string(REGEX REPLACE "^Usage:[^\n]*\n" "" description "${help}")
  string(REGEX REPLACE "\n\n.*" "" description "${description}")
endif()
string(REGEX REPLACE "[ \n]+" " " description "${description}")
string(REGEX REPLACE "^loaderlens: " "" description "${description}")

help_lines("${help}" lines)
set(state before)
set(examples "")
set(after "")
foreach(line IN LISTS lines)
  if(state STREQUAL "before" AND line MATCHES "^Examples?:$")
    set(state examples)
  elseif(state STREQUAL "examples" AND line MATCHES "^  +(.*)$")
    roff_line("${CMAKE_MATCH_1}" text)
    string(APPEND examples "${text}\n")
  elseif((state STREQUAL "examples" OR state STREQUAL "after") AND line STREQUAL "Options:")
    # Qt's page (loaderlens-gui) has its examples in the description, before its options.
    set(state done)
    string(REGEX REPLACE "\\.PP\n$" "" after "${after}")
  elseif(state STREQUAL "examples" OR state STREQUAL "after")
    set(state after)
    if(line STREQUAL "")
      string(APPEND after ".PP\n")
    else()
      roff_line("${line}" text)
      string(APPEND after "${text}\n")
    endif()
  endif()
endforeach()
# Those given here (loaderlens-gui: Qt's page has none), unless the page has them already.
foreach(example IN LISTS EXAMPLES)
  roff_line("${example}" text)
  string(FIND "${examples}" "${text}\n" seen)
  if(seen EQUAL -1)
    string(APPEND examples "${text}\n")
  endif()
endforeach()

set(include "")
# A command with commands of its own (mkdata npy, check replay): their pages, preformatted, in a
# section of their own (help2man reads one --help only). 72 columns: man indents them by 7.
set(state before)
set(commands "")
foreach(line IN LISTS lines)
  if(line STREQUAL "Subcommands:")
    set(state list)
  elseif(state STREQUAL "list" AND line MATCHES "^  ([a-z0-9-]+)( |$)")
    list(APPEND commands ${CMAKE_MATCH_1})
  elseif(state STREQUAL "list" AND NOT line MATCHES "^ ")
    set(state after)
  endif()
endforeach()
if(commands AND NOT SUBCOMMAND STREQUAL "")
  string(APPEND include "[COMMANDS]\n")
  foreach(command IN LISTS commands)
    execute_process(COMMAND ${CMAKE_COMMAND} -E env COLUMNS=72 ${PROGRAM} ${command_words}
                            ${command} --help OUTPUT_VARIABLE page RESULT_VARIABLE status)
    if(NOT status EQUAL 0)
      message(FATAL_ERROR "${PROGRAM} ${SUBCOMMAND} ${command} --help: exit ${status}")
    endif()
    string(APPEND include ".SS \"loaderlens ${SUBCOMMAND} ${command}\"\n.nf\n")
    help_lines("${page}" page_lines)
    foreach(line IN LISTS page_lines)
      roff_line("${line}" text)
      string(APPEND include "${text}\n")
    endforeach()
    string(APPEND include ".fi\n")
  endforeach()
endif()
if(NOT examples STREQUAL "")
  string(APPEND include "[=EXAMPLES]\n.nf\n.RS\n${examples}.RE\n.fi\n${after}\n")
endif()
if(SEE_ALSO)
  list(TRANSFORM SEE_ALSO APPEND " (1)")
  # \% : no line break at the hyphen of a name.
  list(TRANSFORM SEE_ALSO PREPEND ".BR \\%")
  list(JOIN SEE_ALSO ",\n" see_also)
  string(APPEND include "[SEE ALSO]\n${see_also}\n")
endif()
file(WRITE "${OUTPUT}.h2m" "${include}")

if(SUBCOMMAND STREQUAL "")
  set(help_option "--help")
else()
  set(help_option "${SUBCOMMAND} --help")
endif()
execute_process(
  COMMAND ${CMAKE_COMMAND} -E env COLUMNS=80 ${HELP2MAN} --no-info --no-discard-stderr
          "--help-option=${help_option}" "--version-string=${PAGE} ${VERSION}"
          "--name=${description}" "--include=${OUTPUT}.h2m" --section=1
          "--manual=loaderlens manual" "--source=loaderlens ${VERSION}" "--output=${OUTPUT}"
          ${PROGRAM}
  RESULT_VARIABLE status)
if(NOT status EQUAL 0)
  message(FATAL_ERROR "help2man for ${PAGE}: exit ${status}")
endif()
file(REMOVE "${OUTPUT}.h2m")
