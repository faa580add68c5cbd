// SPDX-License-Identifier: MIT
#include "help_examples.hpp"

#include <map>
#include <string>
#include <vector>

namespace loaderlens::cli {

namespace {

struct Page {
    // Each a whole command line; tests/test_help_pages.cpp runs every one through the parser.
    std::vector<std::string> examples;
    // A paragraph after them, or nothing.
    std::string note;
};

// Keyed by the command's path below `loaderlens` ("" for loaderlens itself). Short enough to
// fit on one line at 60 columns.
const std::map<std::string, Page>& pages() {
    static const std::map<std::string, Page> table{
        {"",
         {{"loaderlens record -o run.db -- python3 train.py", "loaderlens report run.db"},
          "Each command has its own page (loaderlens COMMAND --help) and man page "
          "(man loaderlens-COMMAND). Exit status: 0 done, 1 internal error, 2 bad input; record "
          "passes on its command's, check and advise say theirs on their pages (all: "
          "docs/cli.md)."}},
        {"record",
         {{"loaderlens record -o run.db -- python3 train.py --workers 5",
           "loaderlens record -o run.db --pid 12345"},
          "Markers: epochs and steps in the report come from the command itself. In Python, "
          "wrap the DataLoader in loaderlens.torch.track(...) (docs/python.md); any program can "
          "append lines such as \"epoch 1 start\" to the file named by $LOADERLENS_MARKERS, which "
          "record sets for the command (docs/recording.md). With --pid, markers are read from "
          "OUT.markers."}},
        {"report",
         {{"loaderlens report run.db", "loaderlens report --json run.db",
           "loaderlens report --mem-limit 4GiB run.db"},
          ""}},
        {"export",
         {{"loaderlens export --format csv run.db > run.csv",
           "loaderlens export --format openmetrics -o run.om run.db"},
          ""}},
        {"mkdata",
         {{"loaderlens mkdata npy images.npy --count 20000 --shape 3x64x64",
           "loaderlens mkdata lmdb images.lmdb --count 1000 --value-size 64KiB"},
          ""}},
        {"mkdata npy", {{"loaderlens mkdata npy images.npy --count 20000 --shape 3x64x64"}, ""}},
        {"mkdata raw",
         {{"loaderlens mkdata raw records.bin --count 1000 --record-size 64KiB"}, ""}},
        {"mkdata hdf5",
         {{"loaderlens mkdata hdf5 images.h5 --count 2000 --chunks 16x3x32x32"}, ""}},
        {"mkdata lmdb",
         {{"loaderlens mkdata lmdb images.lmdb --count 1000 --value-size 64KiB"}, ""}},
        {"load", {{"loaderlens load images.npy --workers 5 --json"}, ""}},
        {"replay",
         {{"loaderlens replay images.npy --workers 5 --epochs 2 -o run.db",
           "loaderlens replay images.h5 --hdf5-open parent -o run.db"},
          ""}},
        {"ps", {{"loaderlens ps --loaders", "loaderlens ps --all --json"}, ""}},
        {"tail", {{"loaderlens tail --from-start run.db"}, ""}},
        {"check",
         {{"loaderlens check --budget budget.toml run.db",
           "loaderlens check --baseline main.db --tolerance 10% run.db",
           "loaderlens check --budget budget.toml -- python3 train.py"},
          "Budget files: docs/check.md; examples in /usr/share/doc/loaderlens/examples/budgets/."}},
        {"check replay",
         {{"loaderlens check --budget budget.toml replay images.npy --workers 5"}, ""}},
        {"merge", {{"loaderlens merge run-1234.*.db -o job-1234.db"}, ""}},
        {"advise",
         {{"loaderlens advise images.npy --mem-limit 4GiB",
           "loaderlens advise images.npy --mem-limit 4GiB --accounting cgroup"},
          ""}},
    };
    return table;
}

void attach(CLI::App& command, const std::string& path) {
    if (const auto page = pages().find(path); page != pages().end()) {
        std::string footer = command.get_footer();
        if (!footer.empty()) footer += "\n\n";
        // Plural even for one: help2man makes an EXAMPLES section of this heading only.
        footer += "Examples:";
        for (const std::string& line : page->second.examples)
            footer += "\n  " + line;
        if (!page->second.note.empty()) footer += "\n\n" + page->second.note;
        command.footer(footer);
    }
    for (CLI::App* sub : command.get_subcommands(
             [](const CLI::App* a) { return !a->get_name().empty() && !a->get_group().empty(); }))
        attach(*sub, path.empty() ? sub->get_name() : path + " " + sub->get_name());
}

} // namespace

void attach_examples(CLI::App& app) {
    attach(app, "");
}

} // namespace loaderlens::cli
