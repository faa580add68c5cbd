// SPDX-License-Identifier: MIT
#include "dash_arguments.hpp"

#include <algorithm>

namespace loaderlens::cli {

namespace {

// The subcommand `own` selects: its words name subcommands from the top down (mkdata npy ...).
// loaderlens's subcommands take no option values that could be mistaken for a subcommand name
// before they are named, so the first word that names no subcommand ends the walk.
CLI::App* selected_subcommand(CLI::App& app, const std::vector<std::string>& own) {
    CLI::App* current = &app;
    for (const std::string& word : own) {
        if (word.empty() || word[0] == '-') continue;
        CLI::App* next = nullptr;
        for (CLI::App* sub : current->get_subcommands({}))
            if (sub->check_name(word)) next = sub;
        if (!next) break;
        current = next;
    }
    return current;
}

// The positional that takes what follows "--": the one named "command" where there are several
// (`check RECORDING` or `check -- CMD`), else the only one.
CLI::Option* positional_of(CLI::App& sub) {
    CLI::Option* first = nullptr;
    for (CLI::Option* option : sub.get_options()) {
        if (!option->get_positional()) continue;
        if (option->get_name() == "command") return option;
        if (!first) first = option;
    }
    return first;
}

} // namespace

DashSplit split_at_dashes(const std::vector<std::string>& arguments) {
    DashSplit split;
    auto dashes = std::find(arguments.begin(), arguments.end(), "--");
    split.own.assign(arguments.begin(), dashes);
    if (dashes != arguments.end()) split.after_dashes.assign(dashes + 1, arguments.end());
    return split;
}

void assign_after_dashes(CLI::App& app, const DashSplit& split) {
    if (split.after_dashes.empty()) return;
    CLI::App* sub = selected_subcommand(app, split.own);
    CLI::Option* positional = positional_of(*sub);
    if (!positional) throw CLI::ExtrasError(split.after_dashes);
    for (const std::string& value : split.after_dashes)
        positional->add_result(value);
}

void check_after_dashes(CLI::App& app, const DashSplit& split) {
    if (split.after_dashes.empty()) return;
    CLI::Option* positional = positional_of(*selected_subcommand(app, split.own));
    if (positional && positional->count() > split.after_dashes.size())
        throw CLI::ValidationError(positional->get_name(),
                                   "given both before and after --: give it after -- only");
}

} // namespace loaderlens::cli
