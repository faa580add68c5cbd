// SPDX-License-Identifier: MIT
#include "help_completion.hpp"

#include <algorithm>
#include <cctype>
#include <iostream>
#include <memory>
#include <string_view>
#include <utility>
#include <vector>

namespace loaderlens::cli {

namespace {

struct Command {
    std::string path; // below loaderlens: "", "record", "mkdata npy"
    std::vector<std::string> commands, options, valued;
    std::vector<std::pair<std::string, std::string>> choices; // option, its values
    bool positionals = false;
};

// Names and values go into the script between single quotes: only what needs no quoting.
bool plain(const std::string& word) {
    return !word.empty() && std::all_of(word.begin(), word.end(), [](char c) {
        return std::isalnum(static_cast<unsigned char>(c)) ||
               std::string_view("-_.%=+:/,").find(c) != std::string_view::npos;
    });
}

std::string joined(const std::vector<std::string>& words) {
    std::string out;
    for (const std::string& word : words)
        if (plain(word)) out += (out.empty() ? "" : " ") + word;
    return out;
}

// CLI11 writes a check::IsMember's set into the type name: "TEXT:{csv,json}".
std::string choices_of(const CLI::Option& option) {
    const std::string type = option.get_type_name();
    const std::size_t open = type.find(":{");
    const std::size_t close = type.rfind('}');
    if (open == std::string::npos || close == std::string::npos || close < open) return "";
    std::vector<std::string> values;
    const std::string list = type.substr(open + 2, close - open - 2);
    std::size_t start = 0;
    while (start <= list.size()) {
        const std::size_t end = std::min(list.find(',', start), list.size());
        values.push_back(list.substr(start, end - start));
        start = end + 1;
    }
    return joined(values);
}

bool visible(const CLI::App* app) {
    return !app->get_name().empty() && !app->get_group().empty();
}

void collect_options(const CLI::App& app, Command& command) {
    for (const CLI::Option* option : app.get_options()) {
        if (option->get_positional()) {
            command.positionals = true;
            continue;
        }
        std::vector<std::string> names;
        for (const std::string& name : option->get_lnames())
            names.push_back("--" + name);
        for (const std::string& name : option->get_snames())
            names.push_back("-" + name);
        // Each option group has its own --help.
        if (std::find(command.options.begin(), command.options.end(), names.front()) !=
            command.options.end())
            continue;
        command.options.insert(command.options.end(), names.begin(), names.end());
        if (option->get_type_size() == 0) continue;
        command.valued.insert(command.valued.end(), names.begin(), names.end());
        if (const std::string values = choices_of(*option); !values.empty())
            for (const std::string& name : names)
                command.choices.emplace_back(name, values);
    }
    // An option group is a nameless App.
    for (const CLI::App* group :
         app.get_subcommands([](const CLI::App* a) { return a->get_name().empty(); }))
        collect_options(*group, command);
}

void collect(const CLI::App& app, const std::string& path, std::vector<Command>& out) {
    Command command;
    command.path = path;
    collect_options(app, command);
    const auto subs = app.get_subcommands(visible);
    for (const CLI::App* sub : subs)
        command.commands.push_back(sub->get_name());
    out.push_back(command);
    for (const CLI::App* sub : subs)
        collect(*sub, path.empty() ? sub->get_name() : path + " " + sub->get_name(), out);
}

// A bash function `name` that echoes, for the command path in $1, what `words` gives.
template <typename Words>
std::string lookup(const std::string& name, const std::vector<Command>& commands, Words words) {
    std::string out = name + "() {\n    case $1 in\n";
    for (const Command& command : commands)
        if (const std::string list = words(command); !list.empty())
            out += "        '" + command.path + "') echo '" + list + "' ;;\n";
    return out + "    esac\n}\n";
}

constexpr const char* completion_function = R"bash(_loaderlens_files() {
    if declare -F _filedir >/dev/null; then
        _filedir
    else
        compopt -o filenames 2>/dev/null
        local IFS=$'\n'
        COMPREPLY+=($(compgen -f -- "$cur"))
    fi
}

_loaderlens() {
    local cur=${COMP_WORDS[COMP_CWORD]} prev= path= word i
    ((COMP_CWORD > 0)) && prev=${COMP_WORDS[COMP_CWORD - 1]}
    COMPREPLY=()
    for ((i = 1; i < COMP_CWORD; i++)); do
        word=${COMP_WORDS[i]}
        if [[ $word == -- ]]; then
            # The command to record: completed as bash completes a command line.
            if declare -F _command_offset >/dev/null; then
                _command_offset $((i + 1))
            else
                COMPREPLY=($(compgen -c -- "$cur"))
            fi
            return 0
        fi
        [[ " $(_loaderlens_commands "$path") " == *" $word "* ]] && path=${path:+$path }$word
    done
    if [[ -n $prev && " $(_loaderlens_valued "$path") " == *" $prev "* ]]; then
        local values
        values=$(_loaderlens_choices "$path $prev")
        if [[ -n $values ]]; then
            COMPREPLY=($(compgen -W "${values//,/ }" -- "$cur"))
        else
            _loaderlens_files
        fi
        return 0
    fi
    if [[ $cur == -* ]]; then
        COMPREPLY=($(compgen -W "$(_loaderlens_options "$path")" -- "$cur"))
        return 0
    fi
    COMPREPLY=($(compgen -W "$(_loaderlens_commands "$path")" -- "$cur"))
    [[ -n $(_loaderlens_positionals "$path") ]] && _loaderlens_files
    return 0
}
complete -F _loaderlens loaderlens
)bash";

} // namespace

std::string bash_completion(const CLI::App& app) {
    std::vector<Command> commands;
    collect(app, "", commands);
    std::string out = "# bash completion for loaderlens " + app.version() +
                      ", written by `loaderlens completion bash` from its own options.\n"
                      "# shellcheck shell=bash\n";
    out += lookup("_loaderlens_commands", commands,
                  [](const Command& c) { return joined(c.commands); });
    out +=
        lookup("_loaderlens_options", commands, [](const Command& c) { return joined(c.options); });
    out +=
        lookup("_loaderlens_valued", commands, [](const Command& c) { return joined(c.valued); });
    out += lookup("_loaderlens_positionals", commands,
                  [](const Command& c) { return c.positionals ? std::string("yes") : ""; });
    // Keyed by "PATH OPTION".
    out += "_loaderlens_choices() {\n    case $1 in\n";
    for (const Command& command : commands)
        for (const auto& [option, values] : command.choices)
            out += "        '" + command.path + " " + option + "') echo '" + values + "' ;;\n";
    out += "    esac\n}\n\n";
    return out + completion_function;
}

Runner add_completion(CLI::App& app) {
    CLI::App* sub = app.add_subcommand("completion", "Print the bash completion script");
    sub->group(""); // hidden: the packages install its output
    auto shell = std::make_shared<std::string>();
    sub->add_option("shell", *shell, "The shell (bash)")
        ->required()
        ->check(CLI::IsMember({"bash"}));
    return [&app, shell] {
        std::cout << bash_completion(app);
        return exit_ok;
    };
}

} // namespace loaderlens::cli
