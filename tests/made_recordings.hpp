// SPDX-License-Identifier: MIT
// Every recording the test suite makes goes through the consumers check (issue 26: the report,
// the exports and `check` say the same number of every recording, not of a chosen few). run() and
// Child hand each finished `record`, `replay` or `merge` command here; a recording made on the
// test's own thread is checked at once, before the test can damage it on purpose; one made on
// another thread is checked when its TempDir goes, on the test's thread (Boost.Test's checks are
// not thread-safe).
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace loaderlens::test {

// The recording a CLI command line writes (`-o`/`--output` of record, replay or merge, before
// any `--`; the CLI may come after `env VAR=...`), or nullopt for any other command.
std::optional<std::string> recording_written_by(const std::vector<std::string>& argv);

// A command that writes `recording` has ended: checks it now (on the test's thread) or later.
void recording_made(const std::string& recording);

// Checks the recordings made under `dir` by other threads and not yet checked (TempDir's
// destructor calls it; never throws).
void check_recordings_made_under(const std::string& dir) noexcept;

} // namespace loaderlens::test
