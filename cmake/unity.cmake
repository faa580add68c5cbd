# SPDX-License-Identifier: MIT
# Unity (jumbo) builds: LOADERLENS_UNITY_BUILD=ON compiles several .cpp files of a target as one
# translation unit (CMake's UNITY_BUILD), so the heavy headers (CLI11, Boost.Test, nlohmann/json,
# fmt, the standard library) are parsed and their templates instantiated once per batch instead of
# once per file. scripts/test.sh (CI) turns it on for its release build; it is off by default, so
# an edit of one file in a developer's build recompiles that file only. docs/testing.md has the
# measurements.
#
# Only the files listed below (verified) go into batches; every other source of these targets,
# a new one included, is compiled alone as before. A file is listed only once one translation unit
# holding all the listed files of its target, in the target's order, has compiled: files of a
# target share their anonymous namespaces and static functions in a batch, so two helpers of the
# same name (`namespace { int open_proc(...) }` in two files), a `using namespace` or a macro of one
# file seen by the next, would not compile (or, rarely, pick another overload). Left out so far
# for a name clash: sampling/tree_stillness.cpp, output/report_json.cpp, output/live_metrics.cpp,
# output/advise_report.cpp, probes dataset.cpp, mkdata.cpp, shared_buffers.cpp, cli
# merge_command.cpp, merge_inputs.cpp, 24 test files, and tests/test_main.cpp (it defines
# BOOST_TEST_MODULE before its include and has no precompiled header).
#
# To add a file: append it to its target's list, configure a build with -DLOADERLENS_UNITY_BUILD=ON
# -DLOADERLENS_UNITY_BATCH_SIZE=0 (one batch per target: every pair meets) and build that target.
# If it fails with "redefinition of", "conflicts with a previous declaration" or "ambiguous",
# leave it out. A source must never be edited for the sake of a batch.
# Not every clash is a compile error: a namespace-scope `using namespace X;` or `using X::f;` in
# one file reaches the files after it in its batch and can silently pick another function of the
# same name (seen: report_merged_text.cpp's `using report_format::seconds` made openmetrics.cpp
# print "1795000000.2 s" as a timestamp; the openmetrics tests failed). So files with such a
# using at namespace scope (of a project namespace) are left out too: report_text.cpp,
# report_diagnosis_text.cpp, report_residency_text.cpp, report_merged_text.cpp, openmetrics.cpp,
# analysis/budget_check.cpp, store/recording.cpp. The test files' `using namespace loaderlens...`
# are alike in every file; the whole suite passed in a unity build (2026-11-27).
# A compile clash is always an error of a file named unity_N_cxx.cxx in the target's build folder;
# its message names the two files. Fix: remove the later one from the list below.

option(LOADERLENS_UNITY_BUILD "Compile the verified sources of each target in batches (cmake/unity.cmake)" OFF)
set(LOADERLENS_UNITY_BATCH_SIZE 8 CACHE STRING "Sources per unity batch (0: one batch per target)")

# loaderlens_unity(TARGET FILES...): batches of the listed sources of TARGET (paths relative to
# the target's source folder); every other source of TARGET is compiled alone.
function(loaderlens_unity target)
  if(NOT LOADERLENS_UNITY_BUILD OR NOT TARGET ${target})
    return()
  endif()
  get_target_property(dir ${target} SOURCE_DIR)
  set(verified "")
  foreach(file IN LISTS ARGN)
    cmake_path(ABSOLUTE_PATH file BASE_DIRECTORY "${dir}" NORMALIZE OUTPUT_VARIABLE path)
    list(APPEND verified "${path}")
  endforeach()
  get_target_property(sources ${target} SOURCES)
  set(alone "")
  foreach(source IN LISTS sources)
    cmake_path(ABSOLUTE_PATH source BASE_DIRECTORY "${dir}" NORMALIZE OUTPUT_VARIABLE path)
    if(NOT path IN_LIST verified)
      list(APPEND alone "${path}")
    endif()
  endforeach()
  set_target_properties(${target} PROPERTIES UNITY_BUILD ON
    UNITY_BUILD_BATCH_SIZE ${LOADERLENS_UNITY_BATCH_SIZE})
  if(alone)
    set_source_files_properties(${alone} TARGET_DIRECTORY ${target}
      PROPERTIES SKIP_UNITY_BUILD_INCLUSION ON)
  endif()
endfunction()

loaderlens_unity(loaderlens_model
  model/src/types.cpp model/src/units.cpp model/src/one_line.cpp model/src/clock.cpp
  model/src/loader_run.cpp model/src/residency.cpp)
loaderlens_unity(loaderlens_proc
  proc/src/proc_text.cpp proc/src/worker_slots.cpp proc/src/worker_match.cpp
  proc/src/worker_rule.cpp proc/src/exit_watcher.cpp proc/src/tree_tracker.cpp
  proc/src/launcher.cpp proc/src/process_list.cpp proc/src/open_stat_files.cpp)
loaderlens_unity(loaderlens_sampling
  sampling/src/sampler_problems.cpp sampling/src/fast_sampler.cpp sampling/src/rollup_sampler.cpp
  sampling/src/maps_sampler.cpp sampling/src/cgroup_sampler.cpp sampling/src/system_sampler.cpp
  sampling/src/page_cache.cpp sampling/src/pagemap.cpp sampling/src/residency_sampler.cpp
  sampling/src/page_sharing.cpp sampling/src/outside_sharers.cpp
  sampling/src/cachestat_buckets.cpp sampling/src/followed_share.cpp)
loaderlens_unity(loaderlens_store
  store/src/sqlite.cpp store/src/recorder.cpp store/src/recording_data.cpp
  store/src/table_reader.cpp store/src/residency_writer.cpp store/src/residency_decoder.cpp
  store/src/loader_writer.cpp store/src/loader_meta.cpp store/src/row_writer.cpp
  store/src/merge_writer.cpp store/src/recording_parts.cpp)
loaderlens_unity(loaderlens_record
  record/src/session.cpp record/src/marker_tail.cpp record/src/marker_watch.cpp
  record/src/sample_ack.cpp record/src/loader_events.cpp)
loaderlens_unity(loaderlens_analysis
  analysis/src/series.cpp analysis/src/lanes.cpp analysis/src/report_build.cpp
  analysis/src/report_residency.cpp analysis/src/diagnosis.cpp analysis/src/scheduler_views.cpp
  analysis/src/epoch_growth.cpp analysis/src/gap_shares.cpp analysis/src/findings_sharing.cpp
  analysis/src/findings_growth.cpp analysis/src/findings_limits.cpp
  analysis/src/slot_timelines.cpp analysis/src/budget_rules.cpp
  analysis/src/baseline_compare.cpp analysis/src/merged_parts.cpp
  analysis/src/merged_report.cpp analysis/src/advice.cpp)
loaderlens_unity(loaderlens_output
  output/src/diagnosis_json.cpp output/src/residency_json.cpp output/src/export.cpp
  output/src/check_report.cpp output/src/merged_json.cpp output/src/metric_families.cpp
  output/src/metric_set.cpp)
loaderlens_unity(loaderlens_probes
  src/npy.cpp src/lmdb_tree.cpp src/patterns.cpp src/trace_parser.cpp src/loader_names.cpp
  src/loader_events.cpp src/sample_reader.cpp src/prefork_buffer.cpp src/worker.cpp
  src/worker_pool.cpp src/loader.cpp src/buffer_plan.cpp src/read_progress.cpp)
loaderlens_unity(loaderlens
  main.cpp dash_arguments.cpp output_name.cpp output_checks.cpp output_file.cpp
  fd_output_buffer.cpp recording_output.cpp sidecar_file.cpp run_meta.cpp status_line.cpp
  record_command.cpp record_options.cpp metrics_textfile.cpp report_command.cpp
  mkdata_command.cpp parse.cpp loader_options.cpp load_command.cpp replay_command.cpp
  ps_command.cpp tail_command.cpp check_command.cpp budget_file.cpp advise_command.cpp
  advise_grid.cpp advise_progress.cpp)
# What `record` runs (cli/CMakeLists.txt): the same files, in the same order, as above.
loaderlens_unity(loaderlens_cli_record
  dash_arguments.cpp output_name.cpp output_file.cpp fd_output_buffer.cpp recording_output.cpp
  sidecar_file.cpp run_meta.cpp status_line.cpp record_command.cpp record_options.cpp
  metrics_textfile.cpp parse.cpp)
# The test binary (its precompiled header goes into each batch). In the sanitizer build it holds
# a subset of these, in another order (tests/CMakeLists.txt): verified there too.
loaderlens_unity(loaderlens_tests
  cgroup_support.cpp exposition.cpp fuzz_file_edit.cpp fuzz_lmdb_damage.cpp fuzz_npy_damage.cpp
  fuzz_option_values.cpp fuzz_options.cpp fuzz_outcome.cpp fuzz_random.cpp
  fuzz_recording_damage.cpp fuzz_runner.cpp fuzz_spawn.cpp fuzz_sql.cpp fuzz_suite.cpp
  fuzz_values.cpp fuzz_wal_damage.cpp loader_tree.cpp precondition.cpp residency_support.cpp
  smaps_oracle.cpp support.cpp test_advice_rules.cpp test_advise.cpp test_attach_owner.cpp
  test_cachestat_buckets.cpp test_cgroup.cpp test_check.cpp test_cli.cpp test_cursor_errors.cpp
  test_cursor_reads.cpp test_damaged_recordings.cpp test_epoch_end_samples.cpp
  test_exit_status.cpp test_findings.cpp test_fuzz_datasets.cpp test_fuzz_options.cpp
  test_fuzz_oracle.cpp test_job_control.cpp test_launched_command.cpp test_live_report.cpp
  test_loader_events.cpp test_loader_limits.cpp test_merge.cpp test_parsers.cpp
  test_patterns.cpp test_recorder_start.cpp test_recording.cpp test_residency.cpp
  test_residency_access.cpp test_residency_replay.cpp test_samplers.cpp test_scenarios.cpp
  test_series_api.cpp test_tree_tracker.cpp test_unreadable_process.cpp
  test_worker_match_limits.cpp)
