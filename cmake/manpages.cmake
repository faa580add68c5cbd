# SPDX-License-Identifier: MIT
# Man pages from the --help pages (help2man, cmake/help2man_page.cmake) and the bash completion
# from the option tree (`loaderlens completion bash`), written at build time so neither drifts
# from the CLI. Included by cli/CMakeLists.txt. tests/test_help_pages.cpp checks that every command
# of `loaderlens --help` has its page here.
find_program(LOADERLENS_HELP2MAN help2man)

set(loaderlens_commands record report export mkdata load replay ps tail check merge advise)
set(loaderlens_man_dir ${CMAKE_BINARY_DIR}/man)
set(loaderlens_man_pages "")

set(loaderlens_all_pages loaderlens)
foreach(command IN LISTS loaderlens_commands)
  list(APPEND loaderlens_all_pages loaderlens-${command})
endforeach()
if(LOADERLENS_BUILD_GUI)
  list(APPEND loaderlens_all_pages loaderlens-gui)
endif()

# loaderlens_man_page(PAGE PROGRAM_TARGET SUBCOMMAND COMPONENT [EXAMPLES...])
function(loaderlens_man_page page target subcommand component)
  # The overview names every page; each other page names the overview.
  if(page STREQUAL "loaderlens")
    set(see_also ${loaderlens_all_pages})
    list(REMOVE_ITEM see_also ${page})
  else()
    set(see_also loaderlens)
  endif()
  set(output ${loaderlens_man_dir}/${page}.1)
  add_custom_command(
    OUTPUT ${output} ${output}.gz
    COMMAND ${CMAKE_COMMAND} -DPROGRAM=$<TARGET_FILE:${target}> "-DSUBCOMMAND=${subcommand}"
            -DPAGE=${page} -DVERSION=${PROJECT_VERSION} -DHELP2MAN=${LOADERLENS_HELP2MAN}
            -DOUTPUT=${output} "-DSEE_ALSO=${see_also}" "-DEXAMPLES=${ARGN}"
            -P ${PROJECT_SOURCE_DIR}/cmake/help2man_page.cmake
    # Debian's way (dh_compress): -9, and -n so that the bytes do not hold a time.
    COMMAND gzip -9nf -k ${output}
    DEPENDS ${target} ${PROJECT_SOURCE_DIR}/cmake/help2man_page.cmake
    COMMENT "Man page ${page}(1)"
    VERBATIM)
  set(loaderlens_man_pages ${loaderlens_man_pages} ${output}.gz PARENT_SCOPE)
  install(FILES ${output}.gz DESTINATION ${CMAKE_INSTALL_MANDIR}/man1 COMPONENT ${component})
endfunction()

if(LOADERLENS_HELP2MAN)
  file(MAKE_DIRECTORY ${loaderlens_man_dir})
  loaderlens_man_page(loaderlens loaderlens "" cli)
  foreach(command IN LISTS loaderlens_commands)
    loaderlens_man_page(loaderlens-${command} loaderlens ${command} cli)
  endforeach()
  # Its --help is Qt's and has no examples: they are given here. gui/ is added after cli/, so the
  # target is named (resolved at generate time), not tested with if(TARGET).
  if(LOADERLENS_BUILD_GUI)
    loaderlens_man_page(loaderlens-gui loaderlens-gui "" gui "loaderlens-gui run.db"
                        "loaderlens-gui --screenshot run.png --view all run.db")
  endif()
  add_custom_target(loaderlens_man_pages ALL DEPENDS ${loaderlens_man_pages})
else()
  message(WARNING "help2man not found: no man pages (Debian: apt-get install help2man)")
endif()

set(loaderlens_completion ${CMAKE_BINARY_DIR}/completion/loaderlens)
add_custom_command(
  OUTPUT ${loaderlens_completion}
  COMMAND ${CMAKE_COMMAND} -E make_directory ${CMAKE_BINARY_DIR}/completion
  COMMAND sh -c "\"$1\" completion bash > \"$2\"" sh $<TARGET_FILE:loaderlens>
          ${loaderlens_completion}
  DEPENDS loaderlens
  COMMENT "Bash completion of loaderlens"
  VERBATIM)
add_custom_target(loaderlens_bash_completion ALL DEPENDS ${loaderlens_completion})
install(FILES ${loaderlens_completion}
        DESTINATION ${CMAKE_INSTALL_DATADIR}/bash-completion/completions COMPONENT cli)
