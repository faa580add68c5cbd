// SPDX-License-Identifier: MIT
#include "fuzz_options.hpp"

#include "support.hpp"

#include <cctype>
#include <filesystem>
#include <fstream>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

namespace loaderlens::test {

namespace fs = std::filesystem;

namespace {

using Spec = HostileOptions::Spec;
using K = ValueKind;

// Every numeric and path option of every subcommand (`loaderlens SUB --help`), with what makes
// it matter. The loader's flags are one shared parser (cli/loader_options.cpp): `load` runs each
// of them; `replay` (which starts the recorder, ~0.5 s a run) runs its own options and a few of
// the loader's.
const std::vector<Spec> all_specs = {
    {"record", "-o", K::path_out, {}},
    {"record -f", "-o", K::path_out, {}},
    {"record", "--interval", K::interval, {}, true},
    {"record", "--cpu-budget", K::percent, {}},
    {"record", "--pss-max-age", K::duration, {}},
    {"record", "--maps-min-size", K::int64, {}},
    {"record", "--residency-buckets", K::int64, {"--file", "@npy"}},
    {"record", "--residency-min-size", K::size, {}},
    {"record", "--file", K::path_in, {}},
    {"record", "--pid", K::pid, {}},
    {"record", "--worker-match", K::regex, {}},
    {"replay", "-o", K::path_out, {}},
    {"replay -f", "-o", K::path_out, {}},
    {"replay", "", K::path_in, {}},
    {"replay", "--interval", K::interval, {}, true},
    {"replay", "--cpu-budget", K::percent, {}},
    {"replay", "--maps-min-size", K::int64, {}},
    {"replay", "--residency-buckets", K::int64, {}},
    {"replay", "--residency-min-size", K::size, {}},
    {"replay", "--file", K::path_in, {}},
    {"replay", "--batch", K::int64, {}},
    {"replay", "--workers", K::int32, {}, true},
    {"replay", "--epochs", K::int32, {}, true},
    {"replay", "--step-time", K::duration, {}, true},
    {"load", "", K::path_in, {}},
    {"load-lmdb", "", K::path_in, {}},
    {"load", "--batch", K::int64, {}},
    {"load", "--epochs", K::int32, {}, true},
    {"load", "--seed", K::uint64, {}},
    {"load", "--subset", K::fraction, {}},
    {"load", "--num-samples", K::int64, {"--pattern", "random"}, true},
    {"load", "--rank", K::int32, {"--pattern", "distributed", "--world", "2"}},
    {"load", "--world", K::int32, {"--pattern", "distributed"}},
    {"load", "--shard-size", K::int64, {"--pattern", "shards"}},
    {"load", "--zipf-s", K::real, {"--pattern", "zipf", "--num-samples", "64"}},
    {"load", "--window", K::int64, {"--pattern", "windows", "--num-samples", "16"}, true},
    {"load", "--trace", K::path_in, {"--pattern", "trace"}},
    {"load", "--workers", K::int32, {}, true},
    {"load", "--prefetch", K::int32, {}, true},
    {"load", "--cow-heap", K::int64, {}, true},
    {"load", "--step-time", K::duration, {}, true},
    {"load", "--epoch-pause", K::duration, {}, true},
    {"load-raw", "--record-size", K::size, {}},
    {"load-lmdb", "--batch", K::int64, {"--lmdb-open", "parent"}},
    {"mkdata npy", "", K::path_out, {}},
    {"mkdata npy", "--count", K::int64, {}},
    {"mkdata npy", "--size", K::size, {}},
    {"mkdata npy", "--shape", K::shape, {}},
    {"mkdata npy", "--npy-version", K::int32, {}},
    {"mkdata npy", "--seed", K::uint64, {}},
    {"mkdata raw", "", K::path_out, {}},
    {"mkdata raw", "--count", K::int64, {}},
    {"mkdata raw", "--size", K::size, {}},
    {"mkdata raw", "--record-size", K::size, {}},
    {"mkdata lmdb", "", K::path_out, {}},
    {"mkdata lmdb", "--count", K::int64, {}},
    {"mkdata lmdb", "--size", K::size, {}},
    {"mkdata lmdb", "--value-size", K::size, {}},
    {"report", "", K::path_in, {}},
    {"report --json", "", K::path_in, {}},
    {"export", "", K::path_in, {}},
    {"export -o", "-o", K::path_out, {}},
    {"tail", "", K::path_in, {}},
    {"tail", "--interval", K::duration, {}},
    {"advise", "", K::path_in, {}},
    {"advise", "--mem-limit", K::size, {}},
    {"advise", "--budget", K::duration, {}},
    {"advise", "--reserve", K::size, {}},
    {"advise", "--per-worker", K::size, {}},
    {"advise", "--train-epochs", K::int32, {}, true},
    {"advise", "--epochs", K::int32, {}, true},
    {"advise", "--keep", K::path_out, {}},
};

// Stands for a case's own directory of special files in the catalogue's paths.
const std::string special_prefix = "@special/";

bool starts(const std::string& text, const std::string& prefix) {
    return text.rfind(prefix, 0) == 0;
}

// The printable end of a value: what an error line that names it (escaped or not) holds.
std::string printable_tail(const std::string& value) {
    std::size_t begin = value.size();
    while (begin > 0 && static_cast<unsigned char>(value[begin - 1]) >= 0x20 &&
           static_cast<unsigned char>(value[begin - 1]) < 0x7f)
        --begin;
    std::string tail = value.substr(begin);
    if (tail.size() > 30) tail = tail.substr(tail.size() - 30);
    return tail;
}

} // namespace

// The ways an error line may write a value that holds control characters or other bytes: as
// is, control characters as \xNN (or \n, \t and \r by name, or only \n and \t by name, as the
// CLI's print_error does) or ?, every byte outside ASCII as \xNN too; and the printable end of it
// (a long path may be shortened in front).
std::vector<std::string> name_forms(const std::string& value) {
    std::vector<std::string> forms{value};
    for (int style = 0; style < 5; ++style) {
        std::string form;
        for (unsigned char ch : value) {
            const bool control = ch < 0x20 || ch == 0x7f;
            if (style == 3 && control) {
                form += '?';
            } else if (style == 4 && (ch == '\n' || ch == '\t')) {
                form += ch == '\n' ? "\\n" : "\\t";
            } else if (style == 1 && (ch == '\n' || ch == '\t' || ch == '\r')) {
                form += ch == '\n' ? "\\n" : ch == '\t' ? "\\t" : "\\r";
            } else if (control || (style == 2 && ch >= 0x80)) {
                char escape[8];
                std::snprintf(escape, sizeof escape, "\\x%02x", ch);
                form += escape;
            } else {
                form += static_cast<char>(ch);
            }
        }
        forms.push_back(form);
        std::string upper = form; // \xNN in capitals
        for (std::size_t i = 0; i + 3 < upper.size(); ++i)
            if (upper[i] == '\\' && upper[i + 1] == 'x') {
                upper[i + 2] = static_cast<char>(std::toupper(upper[i + 2]));
                upper[i + 3] = static_cast<char>(std::toupper(upper[i + 3]));
            }
        forms.push_back(upper);
    }
    if (const std::string tail = printable_tail(value); tail.size() >= 3) forms.push_back(tail);
    std::erase_if(forms, [](const std::string& form) { return form.empty(); });
    return forms;
}

HostileOptions::HostileOptions(OptionInputs inputs, std::string dir)
    : inputs_(std::move(inputs)), dir_(std::move(dir)), out_dir_(dir_ + "/out"), specs_(all_specs) {
    fs::create_directories(out_dir_);
    // Names only: each case that uses one gets its own (materialize), so that a command that
    // removes or writes one cannot change what the next case sees.
    const std::string at = special_prefix;
    paths_ = {at + "a-directory", at + "a-fifo",       at + "zero",
              at + "null",        at + "full",         at + "dangling",
              at + "loop-a",      at + "new\nline.db", at + std::string(300, 'n'),
              at + "missing",     at + "victim"};
}

std::string HostileOptions::materialize(const std::string& text, const std::string& case_dir,
                                        std::vector<std::string>& nodes) const {
    if (!starts(text, special_prefix)) return text;
    const std::string rest = text.substr(special_prefix.size());
    const std::string name = rest.substr(0, rest.find('/'));
    const fs::path special = fs::path(case_dir) / "special";
    fs::create_directories(special);
    const std::string path = (special / name).string();
    std::error_code ignored;
    // Device nodes of our own (root only): a command that unlinked or wrote one must not take
    // the machine's /dev/zero with it. Without root, symlinks to them stand in.
    auto device = [&](unsigned minor, const char* system) {
        if (geteuid() != 0 || mknod(path.c_str(), S_IFCHR | 0666, makedev(1, minor)) != 0)
            fs::create_symlink(system, path, ignored);
    };
    if (name == "a-directory")
        fs::create_directories(path);
    else if (name == "a-fifo")
        mkfifo(path.c_str(), 0644);
    else if (name == "zero")
        device(5, "/dev/zero");
    else if (name == "null")
        device(3, "/dev/null");
    else if (name == "full")
        device(7, "/dev/full");
    else if (name == "dangling")
        fs::create_symlink(special / "nothing-here", path, ignored);
    else if (name == "loop-a") {
        fs::create_symlink(special / "loop-b", path, ignored);
        fs::create_symlink(special / "loop-a", special / "loop-b", ignored);
    } else if (name == "new\nline.db")
        fs::copy_file(inputs_.recording, path, ignored);
    else if (name == "victim" || name == "victim-link") {
        std::ofstream(special / "victim") << "a file no loaderlens command may write\n";
        fs::create_symlink(special / "victim", special / "victim-link", ignored);
        nodes.push_back((special / "victim").string());
    } else if (starts(name, "link-to-")) {
        const std::string& target = name == "link-to-lmdb"        ? inputs_.lmdb
                                    : name == "link-to-recording" ? inputs_.recording
                                                                  : inputs_.npy;
        fs::create_symlink(target, path, ignored);
    }
    if (name == "a-fifo" || name == "zero" || name == "null" || name == "full" ||
        name == "a-directory")
        nodes.push_back(path);
    return (special / rest).string();
}

std::string HostileOptions::good_input_link(const Spec& spec) const {
    const std::string& special = special_prefix;
    if (spec.command == "load-lmdb") return special + "link-to-lmdb";
    if (starts(spec.command, "report") || spec.command == "export" || spec.command == "tail")
        return special + "link-to-recording";
    return special + "link-to-npy";
}

std::vector<std::string> HostileOptions::argv_for(const Spec& spec, const std::string& value,
                                                  const std::string& out) const {
    std::vector<std::string> argv{fuzz_cli()};
    const bool positional = spec.flag.empty();
    auto options = [&](std::vector<std::pair<std::string, std::string>> base) {
        for (const auto& [flag, text] : base) {
            if (flag == spec.flag || (spec.flag == "--size" && flag == "--count")) continue;
            argv.insert(argv.end(), {flag, text});
        }
        for (const auto& word : spec.context)
            argv.push_back(word == "@npy" ? inputs_.npy : word);
        if (!positional) argv.insert(argv.end(), {spec.flag, value});
    };
    const std::string& c = spec.command;
    if (starts(c, "record")) {
        argv.insert(argv.end(), {"record", "-q"});
        if (c == "record -f") argv.push_back("-f");
        options({{"-o", out}});
        if (spec.flag == "--pid") return argv;
        if (spec.flag == "--worker-match") // a child for the pattern to be matched against
            argv.insert(argv.end(), {"--", "sh", "-c", "sleep 0.3 & wait"});
        else
            argv.insert(argv.end(), {"--", "true"});
    } else if (starts(c, "replay")) {
        argv.insert(argv.end(), {"replay", "-q"});
        if (c == "replay -f") argv.push_back("-f");
        options({{"-o", out}, {"--workers", "1"}, {"--epochs", "1"}, {"--batch", "16"}});
        argv.insert(argv.end(), {"--", positional ? value : inputs_.npy});
    } else if (starts(c, "load")) {
        argv.insert(argv.end(), {"load", "-q"});
        std::vector<std::pair<std::string, std::string>> base{
            {"--workers", "1"}, {"--epochs", "1"}, {"--batch", "16"}};
        std::string dataset = inputs_.npy;
        if (c == "load-raw") dataset = inputs_.raw;
        if (c == "load-lmdb") dataset = inputs_.lmdb;
        options(base);
        argv.insert(argv.end(), {"--", positional ? value : dataset});
    } else if (starts(c, "mkdata")) {
        const std::string format = c.substr(7);
        argv.insert(argv.end(), {"mkdata", format, positional ? value : out});
        if (format == "npy") options({{"--count", "16"}, {"--shape", "4"}});
        if (format == "raw") options({{"--count", "16"}, {"--record-size", "64"}});
        if (format == "lmdb") options({{"--count", "16"}, {"--value-size", "64"}});
    } else if (c == "advise") { // one setting of one epoch: a run takes about 0.5 s
        argv.insert(argv.end(), {"advise", "-q"});
        options({{"--mem-limit", "1G"},
                 {"--budget", "30s"},
                 {"--workers", "1"},
                 {"--persistent", "no"},
                 {"--epochs", "1"}});
        argv.insert(argv.end(), {"--", positional ? value : inputs_.npy});
    } else if (c == "report") {
        argv.insert(argv.end(), {"report", value});
    } else if (c == "report --json") {
        argv.insert(argv.end(), {"report", "--json", value});
    } else if (c == "export") {
        argv.insert(argv.end(), {"export", value});
    } else if (c == "export -o") {
        argv.insert(argv.end(), {"export", "--format", "json", "-o", value, inputs_.recording});
    } else if (c == "tail") { // a finished recording: tail prints it and ends at once
        argv.insert(argv.end(), {"tail", "--from-start"});
        if (positional)
            argv.push_back(value);
        else
            argv.insert(argv.end(), {spec.flag, value, inputs_.recording});
    }
    return argv;
}

FuzzCase HostileOptions::make_case(const Spec& spec, const HostileValue& value, std::uint64_t seed,
                                   std::size_t index) const {
    const std::string& c = spec.command;
    std::string out = out_dir_ + "/case-" + std::to_string(index);
    if (starts(c, "record") || starts(c, "replay")) out += ".db";
    if (c == "mkdata npy") out += ".npy";
    std::string text = value.text == "@good" ? good_input_link(spec) : value.text;
    std::vector<std::string> nodes;
    text = materialize(text, out + "-files", nodes);
    FuzzCommand command;
    command.argv = argv_for(spec, text, out);
    command.expect = value.must_refuse ? FuzzExpect::refuse : FuzzExpect::succeed_or_refuse;
    // A value of the option's kind may still be more than the machine has (memory, disk): then
    // exit 1 (an error of the run, not of the input) is as right as a refusal.
    if (!value.must_refuse || spec.kind == K::path_out) command.refusal_codes = {1, 2};
    if (!spec.flag.empty()) command.names.push_back(spec.flag);
    if (c == "advise") command.verdict_codes = {3}; // no setting fits (a limit of 1 KiB)
    if (!starts(c, "load") && !starts(c, "report") && c != "export" && c != "tail")
        command.names.push_back(out);
    if (spec.flag == "-o") command.names.push_back("--output");
    for (auto& form : name_forms(text))
        command.names.push_back(std::move(form));
    // An error about the run names the dataset it was run on.
    if (starts(c, "load") || starts(c, "replay") || c == "advise")
        command.names.insert(command.names.end(), {inputs_.npy, inputs_.raw, inputs_.lmdb});
    if (text.empty())
        command.names.insert(command.names.end(),
                             {"\"\"", "''", "empty", "no output", "no file", "no path"});
    FuzzCase fuzz_case;
    fuzz_case.seed = seed;
    fuzz_case.index = index;
    fuzz_case.damage = c + " " + (spec.flag.empty() ? "<positional>" : spec.flag) + " " +
                       shell_quote(text.size() > 80 ? text.substr(0, 80) + "..." : text) +
                       (value.must_refuse ? " (must be refused)" : "");
    fuzz_case.reproducer = shell_line(command.argv);
    fuzz_case.unchanged = {inputs_.recording, inputs_.npy, inputs_.raw, inputs_.lmdb + "/data.mdb"};
    // A written output must never be a device, a FIFO, a directory or a symlink's target
    // (issue 10, D1, D2); `export -o` may write to a device (/dev/null) as a shell's > would.
    if (c != "export -o")
        fuzz_case.unchanged.insert(fuzz_case.unchanged.end(), nodes.begin(), nodes.end());
    fuzz_case.commands = {command};
    return fuzz_case;
}

std::vector<FuzzCase> HostileOptions::sweep(std::uint64_t seed) const {
    std::vector<FuzzCase> cases;
    std::size_t next = 0;
    for (const Spec& spec : specs_) {
        auto values = hostile_values(spec.kind, paths_, "@good");
        if (spec.flag == "--keep") // a directory, made with its parents (mkdir -p), not a file
            for (HostileValue& v : values)
                if (v.text == paths_.missing + "/sub/out") v.must_refuse = false;
        if (spec.flag == "--trace" || spec.flag == "--file") // a FIFO is a fair trace (<(...))
            std::erase_if(values, [&](const HostileValue& v) { return v.text == paths_.fifo; });
        if (spec.flag == "--cow-heap") values.push_back({"1048576", false, true}); // 1 TiB
        for (const auto& value : values) {
            if (fuzz_sanitized && value.heavy) continue;
            FuzzCase fuzz_case = make_case(spec, value, seed, next++);
            if (!fuzz_sanitized || fuzz_case.index % 2 == 0) cases.push_back(std::move(fuzz_case));
        }
    }
    for (auto& attack : output_attacks(seed, next))
        cases.push_back(std::move(attack));
    return cases;
}

std::vector<FuzzCase> HostileOptions::random_cases(std::uint64_t seed, std::size_t first_index,
                                                   std::size_t count) const {
    std::vector<FuzzCase> cases;
    for (std::size_t i = first_index; i < first_index + count; ++i) {
        FuzzRandom random = FuzzRandom::for_case(seed, i);
        Spec spec = random.pick(specs_);
        while (spec.kind == K::pid)
            spec = random.pick(specs_);
        cases.push_back(make_case(spec, random_value(spec.kind, random, spec.long_runs), seed, i));
    }
    return cases;
}

std::vector<FuzzCase> HostileOptions::output_attacks(std::uint64_t seed,
                                                     std::size_t first_index) const {
    std::vector<FuzzCase> cases;
    const std::string cli = fuzz_cli();
    // "@db" and "@npy" stand for inputs of the case's own: an attack that succeeds must not
    // spoil the inputs of the cases after it.
    const std::string db = "@db", npy = "@npy";
    auto add = [&](std::vector<std::string> argv, FuzzExpect expect, std::vector<int> codes,
                   std::vector<std::string> names, std::vector<std::string> unchanged,
                   const std::string& what, bool stdout_closed = false) {
        const std::string own = out_dir_ + "/attack-" + std::to_string(cases.size());
        fs::create_directories(own);
        fs::copy_file(inputs_.recording, own + "/input.db", fs::copy_options::overwrite_existing);
        fs::copy_file(inputs_.npy, own + "/input.npy", fs::copy_options::overwrite_existing);
        for (auto* words : {&argv, &names, &unchanged})
            for (auto& word : *words) {
                if (word == db) word = own + "/input.db";
                if (word == npy) word = own + "/input.npy";
            }
        FuzzCommand command;
        command.argv = std::move(argv);
        command.expect = expect;
        command.refusal_codes = std::move(codes);
        command.names = std::move(names);
        command.stdout_closed = stdout_closed;
        FuzzCase fuzz_case;
        fuzz_case.seed = seed;
        fuzz_case.index = first_index + cases.size();
        fuzz_case.damage = what;
        fuzz_case.reproducer = shell_line(command.argv) + (stdout_closed ? " | true" : "");
        fuzz_case.unchanged = std::move(unchanged);
        fuzz_case.commands = {command};
        cases.push_back(std::move(fuzz_case));
    };
    // No command writes over one of its inputs (issue 10, D3).
    add({cli, "export", "--format", "json", "-o", db, db}, FuzzExpect::refuse, {2}, {db}, {db},
        "export -o INPUT INPUT: the output is the recording read");
    add({cli, "replay", "-q", "-f", "-o", npy, "--workers", "1", "--", npy}, FuzzExpect::refuse,
        {2}, {npy}, {npy}, "replay -f -o DATASET DATASET: the output is the dataset read");
    add({cli, "replay", "-q", "-o", npy, "--workers", "1", "--", npy},
        FuzzExpect::succeed_or_refuse, {2}, {npy}, {npy},
        "replay -o DATASET DATASET without -f (the next free name, or refused)");
    add({cli, "mkdata", "npy", npy, "--count", "16"}, FuzzExpect::refuse, {2}, {npy}, {npy},
        "mkdata npy over an existing dataset without --force");
    // --force replaces only a regular file the recorder could have written (D2).
    for (const auto& name : {paths_.fifo, paths_.null_device, paths_.directory}) {
        std::vector<std::string> nodes;
        const std::string node =
            materialize(name, out_dir_ + "/attack-" + std::to_string(cases.size()), nodes);
        add({cli, "record", "-q", "-f", "-o", node, "--", "true"}, FuzzExpect::refuse, {2},
            {printable_tail(node)}, nodes, "record -f -o NODE: NODE is not a regular file");
    }
    // Sidecars planted as symlinks to a victim, by whoever can write the output directory (D1).
    for (const bool replay : {false, true}) {
        for (const bool force : {false, true}) {
            const std::string name = out_dir_ + "/planted-" + std::to_string(cases.size());
            const std::string victim = name + ".victim";
            std::ofstream(victim) << "must stay as it is\n";
            std::error_code ignored;
            for (const char* sidecar : {".markers", ".loader", ".markers.tmp", ".loader.tmp"})
                fs::create_symlink(victim, name + ".db" + sidecar, ignored);
            std::vector<std::string> argv{cli, replay ? "replay" : "record", "-q", "-o",
                                          name + ".db"};
            if (force) argv.push_back("-f");
            if (replay)
                argv.insert(argv.end(), {"--workers", "1", "--epochs", "1", "--", npy});
            else
                argv.insert(argv.end(), {"--", "sh", "-c", "echo e >> \"$LOADERLENS_MARKERS\""});
            add(argv, FuzzExpect::succeed_or_refuse, {1, 2}, {name}, {victim},
                std::string(replay ? "replay" : "record") + (force ? " -f" : "") +
                    ": OUT.db.markers and OUT.db.loader planted as symlinks to a victim file");
        }
    }
    // A closed pipe on stdout: exit 1 with one line, not a death by SIGPIPE.
    const std::vector<std::string> stdout_names{"standard output", "stdout", "output", "pipe"};
    for (const auto& args :
         std::vector<std::vector<std::string>>{{"report", db},
                                               {"report", "--json", db},
                                               {"export", db},
                                               {"export", "--format", "json", db},
                                               {"export", "--format", "residency-csv", db},
                                               {"load", "--json", "--workers", "1", "--", npy}}) {
        std::vector<std::string> argv{cli};
        argv.insert(argv.end(), args.begin(), args.end());
        add(argv, FuzzExpect::refuse, {1}, stdout_names, {db, npy}, "stdout is a closed pipe",
            true);
    }
    return cases;
}

} // namespace loaderlens::test
