// SPDX-License-Identifier: MIT
// The CI check's results as a person reads them (one line per rule) and as CI systems read them
// (JUnit XML: GitLab's unit test reports, Jenkins' junit step, GitHub actions that publish test
// results). docs/check.md shows both.
#pragma once

#include "loaderlens/budget.hpp"

#include <optional>
#include <string>

namespace loaderlens {

struct CheckRun {
    std::string recording;   // the recording checked
    std::string budget_file; // empty: only a baseline comparison
    std::string baseline;    // the baseline recording, if any
    CheckOutcome outcome;
    bool skip_unavailable = false;
    // The recorded command failed ("exited with status 1", "killed by SIGKILL"): one more
    // failing case, so that a report shows it next to the budgets.
    std::optional<std::string> command_failure;
    std::int64_t duration_ms = 0; // of the recording
};

// "PASS  schedulers  slurm_linux peak  2.10 GiB <= 6.00 GiB  at 41.2 s  (where)" per rule, then
// one summary line.
std::string render_check_text(const CheckRun& run);

// JUnit XML: one testsuite, one testcase per rule (classname loaderlens.GROUP, name the rule),
// a <failure> with the line and the details in its body, <skipped> for an unavailable figure the
// budget lets pass.
std::string render_junit(const CheckRun& run);

} // namespace loaderlens
