// SPDX-License-Identifier: MIT
// loaderlens: thin glue between the command line and core/.
#include "commands.hpp"
#include "dash_arguments.hpp"
#include "did_you_mean.hpp"
#include "help_completion.hpp"
#include "help_examples.hpp"
#include "help_format.hpp"
#include "lean_recorder.hpp"
#include "loaderlens/launcher.hpp"
#include "loaderlens/own_memory.hpp"
#include "standard_output.hpp"

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstring>
#include <iostream>
#include <map>
#include <new>
#include <string>
#include <unistd.h>

namespace {

// The argument the user wrote that CLI11 left `extra` of: "-qs" for "-s" when -q is an option.
std::string word_holding(const std::vector<std::string>& words, const std::string& extra) {
    for (const std::string& word : words)
        if (word == extra) return word;
    for (const std::string& word : words)
        if (word.size() > extra.size() && word.front() == '-' && word[1] != '-' &&
            word.ends_with(extra.substr(1)))
            return word;
    return extra;
}

// `loaderlens reprot run.db`: CLI11 says only "A subcommand is required".
std::string no_command_message(const CLI::App& app, const std::vector<std::string>& words) {
    std::vector<std::string> names;
    std::string list;
    // Not the hidden ones (completion): no help page names them.
    for (const CLI::App* sub :
         app.get_subcommands([](const CLI::App* a) { return !a->get_group().empty(); })) {
        names.push_back(sub->get_name());
        list += (list.empty() ? "" : ", ") + sub->get_name();
    }
    const auto typed = std::find_if(words.begin(), words.end(),
                                    [](const std::string& w) { return !w.starts_with('-'); });
    if (typed == words.end()) return "a command is needed: " + list + " (loaderlens --help)";
    const auto near = loaderlens::cli::closest_name(*typed, names);
    return "'" + *typed + "' is not a command" + (near ? " (did you mean '" + *near + "'?)" : "") +
           "; the commands: " + list + " (loaderlens --help)";
}

// `loaderlens report --jsno run.db`: the option of that command nearest to what was typed.
std::string near_option(const CLI::App& app, const std::vector<std::string>& extras) {
    const CLI::App* command = &app;
    while (!command->get_subcommands().empty())
        command = command->get_subcommands().front();
    std::vector<std::string> names;
    // Its own options and those of its option groups (CLI11 keeps a group as a nameless App).
    std::vector<const CLI::App*> owners{command};
    for (std::size_t i = 0; i < owners.size(); ++i) {
        for (const CLI::Option* option : owners[i]->get_options())
            for (const std::string& name : option->get_lnames())
                names.push_back(name);
        for (const CLI::App* group :
             owners[i]->get_subcommands([](const CLI::App* a) { return a->get_name().empty(); }))
            owners.push_back(group);
    }
    for (const std::string& extra : extras) {
        if (!extra.starts_with("--")) continue;
        const std::string typed = extra.substr(2, extra.find('=') - 2);
        if (auto near = loaderlens::cli::closest_name(typed, names))
            return " (did you mean --" + *near + "?)";
    }
    return "";
}

int run(int argc, char** argv) {
    using namespace loaderlens::cli;
    CLI::App app{"loaderlens: the memory of data-loader worker processes, over time", "loaderlens"};
    app.require_subcommand(1);
    app.set_version_flag("--version", std::string(LOADERLENS_VERSION));
    // Before the commands: each inherits it, and so every page wraps to the terminal.
    use_help_formatter(app);
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
    add(add_ps);
    add(add_tail);
    add(add_check);
    add(add_merge);
    add(add_advise);
    add(add_completion);
    attach_examples(app);
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
    } catch (const CLI::RequiredError& e) {
        // CLI11 checks for missing arguments before unknown ones, so `report -x` would only say
        // "file is required": name what it did not take, which is what the user wrote instead.
        for (const std::string& extra : app.remaining(true))
            if (extra.size() > 1 && extra.front() == '-') {
                const std::string word = word_holding(split.own, extra);
                print_error("unknown option " + extra + (word == extra ? "" : " in " + word) +
                            " (" + e.what() + "; a name that starts with '-' is written ./" + word +
                            ")");
                return exit_bad_input;
            }
        if (app.get_subcommands().empty()) {
            print_error(no_command_message(app, split.own));
            return exit_bad_input;
        }
        print_error(e.what());
        return exit_bad_input;
    } catch (const CLI::ExtrasError& e) {
        print_error(e.what() + near_option(app, app.remaining(true)));
        return exit_bad_input;
    } catch (const CLI::ParseError& e) {
        print_error(e.what());
        return exit_bad_input;
    }
    // Parsed and valid: the recorder itself runs without the libraries of the other commands.
    if (app.got_subcommand("record")) exec_lean_recorder(argv);
    try {
        for (CLI::App* sub : app.get_subcommands())
            if (auto it = runners.find(sub); it != runners.end()) return it->second();
    } catch (const std::bad_alloc&) {
        print_error("out of memory");
        return exit_internal;
    } catch (const std::exception& e) {
        print_error(e.what());
        return exit_internal;
    }
    return exit_internal;
}

} // namespace

int main(int argc, char** argv) {
    // The commands that run a recorder, a process of the job whose memory the scheduler counts
    // (own_memory.hpp). Not `load`: the reference loader is the workload being measured, and its
    // malloc and its pages stay as a user's loader would have them.
    const std::string command = argc > 1 ? argv[1] : "";
    if (command == "record" || command == "replay" || command == "check" || command == "advise") {
        // Before any thread: each would otherwise get its own malloc arena.
        loaderlens::limit_malloc_arenas();
        // The library text that ld.so and the constructors touched and nothing runs again; the
        // peak the recording reports starts here, before the command.
        loaderlens::drop_idle_file_pages();
        loaderlens::reset_peak_rss();
    }
    // What the command of `record` gets back (nohup's ignored SIGHUP, say), before we change it.
    loaderlens::remember_inherited_signal_dispositions();
    // A closed pipe is a write error (EPIPE, exit 1), not a death by SIGPIPE. And children are
    // waited for, even if we were started with SIGCHLD ignored.
    loaderlens::cli::remember_dispositions_before_exec();
    std::signal(SIGPIPE, SIG_IGN);
    std::signal(SIGCHLD, SIG_DFL);
    loaderlens::cli::use_standard_output_buffer();
    return loaderlens::cli::finish_standard_output(run(argc, argv));
}
