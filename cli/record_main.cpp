// SPDX-License-Identifier: MIT
// loaderlens-record: `loaderlens record` once loaderlens has parsed its command line and execed
// this (lean_recorder.hpp). It links the recording side only, so the recorder the job's
// scheduler counts maps no library that only the other commands call.
#include "commands.hpp"
#include "dash_arguments.hpp"
#include "loaderlens/launcher.hpp"
#include "loaderlens/own_memory.hpp"
#include "standard_output.hpp"

#include <csignal>
#include <new>
#include <string>
#include <sys/prctl.h>
#include <vector>

namespace {

int run(int argc, char** argv) {
    using namespace loaderlens::cli;
    CLI::App app{"loaderlens: the memory of data-loader worker processes, over time", "loaderlens"};
    app.require_subcommand(1);
    Runner runner = add_record(app);
    const DashSplit split = split_at_dashes(std::vector<std::string>(argv + 1, argv + argc));
    try {
        assign_after_dashes(app, split);
        std::vector<std::string> own(split.own.rbegin(), split.own.rend());
        app.parse(own);
        check_after_dashes(app, split);
    } catch (const CLI::ParseError& e) {
        // loaderlens took these words already: only a different loaderlens-record gets here.
        print_error(std::string(e.what()) +
                    " (loaderlens-record is not the one of this loaderlens)");
        return exit_bad_input;
    }
    try {
        return runner();
    } catch (const std::bad_alloc&) {
        print_error("out of memory");
    } catch (const std::exception& e) {
        print_error(e.what());
    }
    return exit_internal;
}

} // namespace

int main(int argc, char** argv) {
    // What `ps`, `top` and `pgrep loaderlens` showed for the recorder before it was a binary of
    // its own.
    ::prctl(PR_SET_NAME, "loaderlens");
    // As loaderlens's main() does for the commands that run a recorder (own_memory.hpp).
    loaderlens::limit_malloc_arenas();
    loaderlens::drop_idle_file_pages();
    loaderlens::reset_peak_rss();
    loaderlens::remember_inherited_signal_dispositions();
    std::signal(SIGPIPE, SIG_IGN);
    std::signal(SIGCHLD, SIG_DFL);
    loaderlens::cli::use_standard_output_buffer();
    return loaderlens::cli::finish_standard_output(run(argc, argv));
}
