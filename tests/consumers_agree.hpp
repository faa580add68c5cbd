// SPDX-License-Identifier: MIT
// Every number printed twice is the same number (issue 26, item 6): one recording read by the CLI
// as a user reads it (`report`, `report --json`, `export --format json|csv|openmetrics`, `check`
// with a budget made from the report) and every figure two of them share compared. The reference
// is `report --json`; a text consumer must print exactly the report's own rounding of that figure
// (format_kib: 1 KiB, 0.1 MiB or 0.01 GiB; times to 0.1 s), so the only tolerance is that
// rounding. The dashboard's models are compared in tests/gui (gui_consumers_agree).
#pragma once

#include <string>

namespace loaderlens::test {

struct ConsumersAgreeOptions {
    // Passed to `report --mem-limit` and written as the budget's mem_limit (empty: none).
    std::string mem_limit;
};

// Runs the consumers over `recording` and BOOST_CHECKs every shared figure, each failure naming
// the figure, the two consumers and what each says. Returns how many figures were compared.
int check_consumers_agree(const std::string& recording, const ConsumersAgreeOptions& options = {});

// Records (as nobody) a tree whose main and one workload run as root: their PSS cannot be read
// (no CAP_SYS_PTRACE), so every Σ PSS is partial; the other workload's two workers run as nobody
// and are read. `dir` must be writable by nobody; the data file is made there. Needs root and
// setpriv: the caller checks precondition(can_record_partly_unreadable()) first.
bool can_record_partly_unreadable();
void record_partly_unreadable(const std::string& dir, const std::string& output);

} // namespace loaderlens::test
