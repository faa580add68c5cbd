// SPDX-License-Identifier: MIT
// loaderlens: thin glue between the command line and core/.
#include "commands.hpp"
#include "dash_arguments.hpp"

#include <iostream>
#include <map>

int main(int argc, char** argv) {
    using namespace loaderlens::cli;
    CLI::App app{"loaderlens: the memory of data-loader worker processes, over time", "loaderlens"};
    app.require_subcommand(1);
    app.set_version_flag("--version", std::string(LOADERLENS_VERSION));
    std::map<CLI::App*, Runner> runners;
    auto add = [&](Runner (*adder)(CLI::App&)) {
        Runner runner = adder(app);
        runners[app.get_subcommands({}).back()] = std::move(runner);
    };
    add(add_record);
    add(add_report);
    add(add_export);
    add(add_mkdata);
    add(add_load);
    add(add_replay);
    const DashSplit split = split_at_dashes(std::vector<std::string>(argv + 1, argv + argc));
    try {
        assign_after_dashes(app, split);
        std::vector<std::string> own(split.own.rbegin(),
                                     split.own.rend()); // CLI11 wants it reversed
        app.parse(own);
        check_after_dashes(app, split);
    } catch (const CLI::CallForHelp& e) {
        return app.exit(e);
    } catch (const CLI::CallForAllHelp& e) {
        return app.exit(e);
    } catch (const CLI::CallForVersion& e) {
        return app.exit(e);
    } catch (const CLI::ParseError& e) {
        print_error(e.what());
        return exit_bad_input;
    }
    try {
        for (CLI::App* sub : app.get_subcommands())
            if (auto it = runners.find(sub); it != runners.end()) return it->second();
    } catch (const std::exception& e) {
        print_error(e.what());
        return exit_internal;
    }
    return exit_internal;
}

namespace loaderlens::cli {
void print_error(const std::string& message) {
    std::cerr << "loaderlens: " << message << "\n";
}
} // namespace loaderlens::cli
