// SPDX-License-Identifier: MIT
#include "fuzz_outcome.hpp"

#include "support.hpp"

#include <algorithm>
#include <csignal>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sys/wait.h>

namespace loaderlens::test {

namespace {

// Text that must never reach a user: a sanitizer's report, or a C++ exception's own words (what()
// of the standard library, which names no input and was never meant for a user).
const char* const forbidden[] = {
    "ERROR: AddressSanitizer",
    "ERROR: LeakSanitizer",
    "runtime error:",
    "SUMMARY: ",
    "AddressSanitizer:",
    "stoll",
    "stoi",
    "stod",
    "stoul",
    "std::",
    "bad_alloc",
    "terminate called",
    "what():",
    "basic_string",
    "vector::",
    "_M_",
    "nlohmann",
    "json.exception",
    "Segmentation fault",
};

// The stderr shown in a message: its first lines, escaped.
std::string shown(const std::string& text) {
    std::string out;
    int lines = 0;
    for (std::size_t i = 0; i < text.size() && lines < 6; ++i) {
        const unsigned char ch = static_cast<unsigned char>(text[i]);
        if (ch == '\n') {
            ++lines;
            out += "\n      ";
        } else if (ch < 0x20 || ch == 0x7f) {
            char escape[8];
            std::snprintf(escape, sizeof escape, "\\x%02x", ch);
            out += escape;
        } else {
            out += static_cast<char>(ch);
        }
        if (out.size() > 1500) {
            out += "...";
            break;
        }
    }
    return out;
}

std::optional<std::string> output_problem(const FuzzCommand& command, const CommandEnd& end) {
    switch (command.output) {
    case FuzzOutput::any:
        return std::nullopt;
    case FuzzOutput::text:
        if (end.out.empty()) return "nothing on stdout";
        return std::nullopt;
    case FuzzOutput::csv:
        return csv_problem(end.out);
    case FuzzOutput::json:
    case FuzzOutput::json_file: {
        std::string text = end.out;
        if (command.output == FuzzOutput::json_file) {
            std::ifstream in(command.output_file, std::ios::binary);
            if (!in) return "no output file " + command.output_file;
            text.assign(std::istreambuf_iterator<char>(in), {});
        }
        try {
            const auto parsed = nlohmann::json::parse(text);
            (void)parsed;
        } catch (const std::exception& e) {
            return std::string("the output is not JSON (") + e.what() + ")";
        }
        return std::nullopt;
    }
    }
    return std::nullopt;
}

std::string expected_codes(const FuzzCommand& command) {
    std::string codes;
    for (int code : command.refusal_codes)
        codes += (codes.empty() ? "" : " or ") + std::to_string(code);
    return codes;
}

} // namespace

std::optional<std::string> csv_problem(const std::string& text) {
    if (text.empty()) return "no CSV on stdout";
    std::size_t header_fields = 0, fields = 1, row = 0;
    bool quoted = false, at_field_start = true;
    for (std::size_t i = 0; i < text.size(); ++i) {
        const char ch = text[i];
        if (quoted) {
            if (ch == '"' && i + 1 < text.size() && text[i + 1] == '"')
                ++i;
            else if (ch == '"')
                quoted = false;
            continue;
        }
        if (ch == '"' && at_field_start) {
            quoted = true;
            at_field_start = false;
        } else if (ch == '"') {
            return "CSV row " + std::to_string(row) + ": a quote inside an unquoted field";
        } else if (ch == ',') {
            ++fields;
            at_field_start = true;
        } else if (ch == '\n') {
            if (row == 0)
                header_fields = fields;
            else if (fields != header_fields)
                return "CSV row " + std::to_string(row) + " has " + std::to_string(fields) +
                       " fields, the header " + std::to_string(header_fields);
            ++row;
            fields = 1;
            at_field_start = true;
        } else {
            at_field_start = false;
        }
    }
    if (quoted) return "CSV ends inside a quoted field";
    if (text.back() != '\n') return "CSV does not end with a newline";
    return std::nullopt;
}

std::optional<std::string> judge_outcome(const FuzzCommand& command, const CommandEnd& end) {
    const std::string err = "\n    stderr: " + shown(end.err);
    if (end.timed_out)
        return "did not end within the time limit (killed after " +
               std::to_string(static_cast<int>(end.seconds)) + " s)" + err;
    if (WIFSIGNALED(end.status)) {
        const int signal = WTERMSIG(end.status);
        return "died of signal " + std::to_string(signal) + " (" + strsignal(signal) + ")" + err;
    }
    for (const char* text : forbidden) {
        if (end.err.find(text) != std::string::npos)
            return std::string("stderr holds \"") + text +
                   "\" (a sanitizer report, a crash or C++ exception text)" + err;
    }
    const int code = WEXITSTATUS(end.status);
    const bool verdict = std::find(command.verdict_codes.begin(), command.verdict_codes.end(),
                                   code) != command.verdict_codes.end();
    if (code == 0 || verdict) {
        if (command.expect == FuzzExpect::refuse)
            return "exit " + std::to_string(code) + ": this input must be refused (exit " +
                   expected_codes(command) + ")" + err;
        if (auto problem = output_problem(command, end))
            return "exit " + std::to_string(code) + ", but " + *problem + err;
        return std::nullopt;
    }
    if (command.expect == FuzzExpect::succeed)
        return "exit " + std::to_string(code) + " where exit 0 is expected (nothing is wrong " +
               "with this input)" + err;
    if (std::find(command.refusal_codes.begin(), command.refusal_codes.end(), code) ==
        command.refusal_codes.end())
        return "exit " + std::to_string(code) + ", documented: " + expected_codes(command) + err;
    const auto lines = std::count(end.err.begin(), end.err.end(), '\n');
    if (lines != 1 || end.err.back() != '\n')
        return "exit " + std::to_string(code) + " with " + std::to_string(lines) +
               " lines on stderr, not exactly one" + err;
    if (!command.names.empty() &&
        std::none_of(command.names.begin(), command.names.end(),
                     [&](const std::string& name) { return mentions(end.err, name); }))
        return "exit " + std::to_string(code) + ": the error line does not name the input (" +
               command.names.front() + ")" + err;
    return std::nullopt;
}

} // namespace loaderlens::test
