# SPDX-License-Identifier: MIT
# What is installed beside the programs, and the Debian packages CPack makes of it (issue 30).
# Included last from the top-level CMakeLists.txt: CPack reads every install rule of the project.
#
# Three install components, three packages:
#   cli    -> loaderlens          the CLI, man pages, bash completion, docs, example budgets,
#                                 the Grafana dashboard (no Qt: a headless node installs this one)
#   gui    -> loaderlens-gui      the dashboard and its desktop entry
#   python -> python3-loaderlens  the Python package and its pytest plugin
# Build them: cpack --config build/CPackConfig.cmake -G DEB -B OUTDIR   (tests/packaging/)

# Documentation: Debian keeps a package's docs and examples under /usr/share/doc/PACKAGE; nothing
# the programs need at run time lives there (a site may drop /usr/share/doc).
install(FILES README.md DESTINATION ${CMAKE_INSTALL_DOCDIR} COMPONENT cli)
# Read at install time: a page or picture added to docs/ is installed without a re-configure.
install(DIRECTORY docs/ DESTINATION ${CMAKE_INSTALL_DOCDIR}/docs COMPONENT cli
        FILES_MATCHING PATTERN "*.md" PATTERN "*.png" PATTERN "*.json")
install(DIRECTORY resources/budgets/ DESTINATION ${CMAKE_INSTALL_DOCDIR}/examples/budgets
        COMPONENT cli FILES_MATCHING PATTERN "*.toml")
# The dashboard for Grafana is data a site imports, not documentation.
install(DIRECTORY resources/grafana/ DESTINATION ${CMAKE_INSTALL_DATADIR}/loaderlens/grafana
        COMPONENT cli OPTIONAL FILES_MATCHING PATTERN "*.json" PATTERN "*.md")

# Every Debian package carries /usr/share/doc/PACKAGE/copyright (Policy 12.5), in the
# machine-readable format, made from LICENSE so the two cannot disagree.
file(READ "${CMAKE_CURRENT_SOURCE_DIR}/LICENSE" loaderlens_license)
string(REGEX MATCH "Copyright \\(c\\) ([^\n]*)" loaderlens_copyright_line "${loaderlens_license}")
set(loaderlens_copyright_holder "${CMAKE_MATCH_1}")
# The licence text after its title and copyright lines, each line indented (a blank one as " .").
string(REGEX REPLACE "^[^\n]*\n\n[^\n]*\n\n" "" loaderlens_license_body "${loaderlens_license}")
string(STRIP "${loaderlens_license_body}" loaderlens_license_body)
string(REGEX REPLACE "\n\n" "\n.\n" loaderlens_license_body "${loaderlens_license_body}")
string(REGEX REPLACE "\n" "\n " loaderlens_license_body "${loaderlens_license_body}")
set(loaderlens_copyright "${CMAKE_CURRENT_BINARY_DIR}/debian/copyright")
file(CONFIGURE OUTPUT "${loaderlens_copyright}" CONTENT "\
Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/
Upstream-Name: loaderlens

Files: *
Copyright: ${loaderlens_copyright_holder}
License: MIT

License: MIT
 ${loaderlens_license_body}
" @ONLY)
install(FILES "${loaderlens_copyright}" DESTINATION ${CMAKE_INSTALL_DATADIR}/doc/loaderlens
        COMPONENT cli)
install(FILES "${loaderlens_copyright}" DESTINATION ${CMAKE_INSTALL_DATADIR}/doc/python3-loaderlens
        COMPONENT python)
if(LOADERLENS_BUILD_GUI)
  install(FILES "${loaderlens_copyright}" DESTINATION ${CMAKE_INSTALL_DATADIR}/doc/loaderlens-gui
          COMPONENT gui)
  install(FILES resources/loaderlens-gui.desktop DESTINATION ${CMAKE_INSTALL_DATADIR}/applications
          COMPONENT gui)
endif()

# ---- CPack: Debian packages ----
set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME loaderlens)
set(CPACK_PACKAGE_VERSION "${PROJECT_VERSION}")
set(CPACK_PACKAGE_VENDOR "The loaderlens authors")
set(CPACK_PACKAGE_CONTACT "The loaderlens authors <loaderlens@localhost>")
set(CPACK_DEBIAN_PACKAGE_MAINTAINER "${CPACK_PACKAGE_CONTACT}")
# The Debian revision: 0.1.0-1. Every package names the others at this exact version.
set(CPACK_DEBIAN_PACKAGE_RELEASE 1)
set(loaderlens_deb_version "${PROJECT_VERSION}-${CPACK_DEBIAN_PACKAGE_RELEASE}")
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT) # NAME_VERSION-REVISION_ARCH.deb, as Debian names them
set(CPACK_DEBIAN_COMPRESSION_TYPE xz)
# The files go to /usr (Debian's prefix for packaged files), whatever the build's
# CMAKE_INSTALL_PREFIX. DESTDIR staging, so that the install rules see CMAKE_INSTALL_PREFIX=/usr
# while they run: python/ writes the installed CLI's path into _build_info.py and chooses Debian's
# dist-packages from it (without DESTDIR CPack hands them the staging directory as the prefix).
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_INSTALL_PREFIX /usr)
set(CPACK_SET_DESTDIR ON)
# Stripped: the CLI is 22 MB with -g1 line tables and 3 MB without (measured 2026-11-29).
set(CPACK_STRIP_FILES ON)
set(CPACK_DEBIAN_PACKAGE_CONTROL_STRICT_PERMISSION ON)

set(CPACK_DEB_COMPONENT_INSTALL ON)
set(CPACK_COMPONENTS_ALL cli python)
if(LOADERLENS_BUILD_GUI)
  list(APPEND CPACK_COMPONENTS_ALL gui)
endif()
# The libraries each binary links, with their versions, from dpkg-shlibdeps (dpkg-dev); what no
# ELF file says is named by hand below.
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)

set(CPACK_DEBIAN_CLI_PACKAGE_NAME loaderlens)
set(CPACK_DEBIAN_CLI_PACKAGE_SECTION devel)
set(CPACK_DEBIAN_CLI_PACKAGE_SUGGESTS "loaderlens-gui, python3-loaderlens")
set(CPACK_COMPONENT_CLI_DESCRIPTION "memory recorder for data-loader worker processes
loaderlens samples a process tree over time (RSS, PSS, USS, the anon/file/shmem split, memory
per mapped file, the cgroup charge and the page residency of dataset files), records it into
one SQLite file and reports which process holds what, as each scheduler counts it (SLURM,
Kubernetes, cgroups). It also replays PyTorch-like DataLoaders over generated datasets,
advises loader settings that fit a memory limit and checks memory budgets in CI.

This package holds the command-line tool, its manual pages, bash completion, documentation,
example budgets and a Grafana dashboard. The Qt dashboard is in loaderlens-gui.")

set(CPACK_DEBIAN_GUI_PACKAGE_NAME loaderlens-gui)
set(CPACK_DEBIAN_GUI_PACKAGE_SECTION devel)
# It runs the CLI of the same build for record, replay and ps (installed side by side), and Qt
# loads its platform plugin (xcb, offscreen) at run time: no ELF file names qt6-qpa-plugins.
set(CPACK_DEBIAN_GUI_PACKAGE_DEPENDS "loaderlens (= ${loaderlens_deb_version}), qt6-qpa-plugins")
set(CPACK_COMPONENT_GUI_DESCRIPTION "Qt dashboard for loaderlens memory recordings
loaderlens-gui shows a loaderlens recording, finished or being written: the worker tree's memory
over time, each scheduler's view against its limit, mapped files and their page residency. It
can record or attach from the window, and render screenshots without a display.")

set(CPACK_DEBIAN_PYTHON_PACKAGE_NAME python3-loaderlens)
set(CPACK_DEBIAN_PYTHON_PACKAGE_SECTION python)
set(CPACK_DEBIAN_PYTHON_PACKAGE_ARCHITECTURE all)
set(CPACK_DEBIAN_PYTHON_PACKAGE_SHLIBDEPS OFF)
set(CPACK_DEBIAN_PYTHON_PACKAGE_DEPENDS "python3, loaderlens (= ${loaderlens_deb_version})")
# Byte-compiled at install and cleaned before removal, as dh_python3 does: Python would otherwise
# leave root-written __pycache__ directories behind that dpkg does not know.
set(CPACK_DEBIAN_PYTHON_PACKAGE_CONTROL_EXTRA
    "${CMAKE_CURRENT_SOURCE_DIR}/resources/debian/python3-loaderlens/postinst"
    "${CMAKE_CURRENT_SOURCE_DIR}/resources/debian/python3-loaderlens/prerm")
set(CPACK_COMPONENT_PYTHON_DESCRIPTION "Python markers and pytest plugin for loaderlens
Marks epochs and events in a loaderlens recording from Python (loaderlens.mark,
loaderlens.torch.track for a PyTorch DataLoader), runs a recorder around a block of code, and
provides a pytest plugin whose marker fails a test when its memory breaks a budget.")

include(CPack)
