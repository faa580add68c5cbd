// SPDX-License-Identifier: MIT
// `loaderlens advise`'s answer as a person reads it (the table, the recommendation and why the
// other settings lost) and as a machine reads it (JSON). docs/advise.md shows both.
#pragma once

#include "loaderlens/advice.hpp"

#include <string>
#include <vector>

namespace loaderlens {

struct AdviseRun {
    std::string dataset;             // as given
    std::string dataset_description; // "npy |u1 (20000, 3, 64, 64)"
    std::int64_t dataset_bytes = 0;
    std::int64_t limit_kb = 0;
    Accounting accounting = Accounting::slurm_linux;
    AdviseAssumptions assumptions;
    int replay_epochs = 0;
    std::vector<std::string> replay_flags; // what every replay shares: "--pattern", "shuffle"...
    double budget_s = 0, elapsed_s = 0;
    bool interrupted = false;
    std::vector<AdviseRow> rows;
    Recommendation recommendation; // under `accounting`
    // The recommendation each accounting would make over the same rows.
    std::vector<std::pair<Accounting, Recommendation>> by_accounting;
    std::string page_cache; // how each replay found the dataset's page cache
    std::vector<std::string> notes;
};

// The command that replays a row's setting (`loaderlens replay DATASET --workers 4 ...`).
std::string replay_command_for(const AdviseRun& run, const AdviseRow& row);

std::string render_advise_text(const AdviseRun& run);
std::string render_advise_json(const AdviseRun& run);

} // namespace loaderlens
