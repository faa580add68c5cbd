// SPDX-License-Identifier: MIT
// `loaderlens merge` on real recordings: two replays of one SLURM job on two "nodes" (different
// worker counts, started more than a second apart, overlapping in time), merged and checked
// against the inputs read separately, by the test's own sums (not through the merge's code):
// the processes, each part's Σ RSS shifted by its offset, the job totals at a tick, each part's
// peaks against the input's own report, the offsets against the inputs' start_unix_ns. Then the
// refusals (one line naming the input, exit 2, nothing written), a cut input (a warning), and the
// merged file in every reader path.
#include "loaderlens/recorder.hpp"
#include "loaderlens/recording.hpp"
#include "replay_support.hpp"
#include "support.hpp"

#include <boost/test/unit_test.hpp>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <thread>

using namespace loaderlens;
using namespace loaderlens::test;
using namespace std::chrono_literals;
using nlohmann::json;
namespace fs = std::filesystem;

namespace {

constexpr const char* job_id = "4242";

// `loaderlens replay` as SLURM task `task` of step 0 of the job on host `node`.
std::vector<std::string> replay_on(const std::string& node, int task, const std::string& out,
                                   const std::string& data, int workers,
                                   const std::string& step_time) {
    return {"env",
            std::string("SLURM_JOB_ID=") + job_id,
            "SLURM_STEP_ID=0",
            "SLURM_PROCID=" + std::to_string(task),
            "SLURMD_NODENAME=" + node,
            cli_path(),
            "replay",
            "-q",
            "-o",
            out,
            data,
            "--workers",
            std::to_string(workers),
            "--epochs",
            "2",
            "--batch",
            "16",
            "--step-time",
            step_time};
}

// Two nodes' recordings of one job, made once for the suite: node1 (2 workers, about 3.5 s),
// node2 (3 workers) started 1.5 s later, so that their runs overlap.
struct Inputs {
    TempDir dir;
    std::string a = dir.file("run-4242-node1.db"), b = dir.file("run-4242-node2.db");
    std::string job = dir.file("job.db");
    Inputs() {
        const std::string data = dir.file("d.npy");
        mkdata({"npy", data, "--count", "512", "--shape", "4096", "--dtype", "u1"});
        Child first(replay_on("node1", 0, a, data, 2, "50ms"));
        std::this_thread::sleep_for(1500ms);
        const RunResult second = run(replay_on("node2", 1, b, data, 3, "20ms"), 120s);
        BOOST_REQUIRE_MESSAGE(second.exit_code == 0, second.err);
        const auto status = first.wait(120s);
        BOOST_REQUIRE(status && WIFEXITED(*status) && WEXITSTATUS(*status) == 0);
        const RunResult merged = run({cli_path(), "merge", a, b, "-o", job});
        BOOST_REQUIRE_MESSAGE(merged.exit_code == 0, merged.err);
    }
};

const Inputs& inputs() {
    static Inputs made;
    return made;
}

json report_json(const std::vector<std::string>& args) {
    std::vector<std::string> argv{cli_path(), "report", "--json"};
    argv.insert(argv.end(), args.begin(), args.end());
    const RunResult r = run(argv);
    BOOST_REQUIRE_MESSAGE(r.exit_code == 0, r.err);
    return json::parse(r.out);
}

std::int64_t start_ns(const std::string& recording) {
    return *Recording(recording).meta_number("start_unix_ns");
}

// Σ RSS per fast tick of the processes `keep` selects, by the test's own sum.
template <typename Keep>
std::map<std::int64_t, std::int64_t> rss_sums(const std::string& file, Keep keep) {
    const RecordingData data = Recording(file).read_all();
    std::set<std::int64_t> kept;
    for (const ProcessInfo& p : data.processes)
        if (keep(p)) kept.insert(p.id);
    std::map<std::int64_t, std::int64_t> sums;
    for (const auto& [t, s] : data.fast)
        if (kept.contains(s.process_id) && s.rss) sums[t] += *s.rss;
    return sums;
}

// A view's points from a report's JSON: t_ms -> kib (null: unavailable).
std::map<std::int64_t, std::optional<std::int64_t>> points_of(const json& report,
                                                              const std::string& key) {
    std::map<std::int64_t, std::optional<std::int64_t>> out;
    for (const json& view : report["schedulers"])
        if (view["key"] == key)
            for (const json& p : view["points"])
                out[p[0].get<std::int64_t>()] =
                    p[1].is_null() ? std::nullopt : std::optional(p[1].get<std::int64_t>());
    return out;
}

// The files in `dir`, to see that a refused merge wrote nothing (not even a temporary file).
std::set<std::string> listing(const fs::path& dir) {
    std::set<std::string> out;
    for (const auto& entry : fs::directory_iterator(dir))
        out.insert(entry.path().filename().string());
    return out;
}

// `merge ARGS...` is refused: exit 2, a line naming `input` that says `why`, nothing written.
void require_refused(const std::vector<std::string>& args, const std::string& input,
                     const std::string& why) {
    const auto o = std::find(args.begin(), args.end(), "-o");
    BOOST_REQUIRE(o != args.end() && o + 1 != args.end());
    const fs::path dir = fs::absolute(*(o + 1)).parent_path();
    const std::set<std::string> before = listing(dir);
    std::vector<std::string> argv{cli_path(), "merge"};
    argv.insert(argv.end(), args.begin(), args.end());
    const RunResult r = run(argv);
    BOOST_TEST(r.exit_code == 2, r.err);
    bool named = false;
    for (const std::string& line : lines_of(r.err))
        named = named || (line.starts_with("loaderlens: " + input + ": ") &&
                          line.find(why) != std::string::npos);
    BOOST_TEST(named, "no line naming " << input << " with '" << why << "' in: " << r.err);
    BOOST_TEST(r.out == "");
    BOOST_TEST((listing(dir) == before), "files appeared in " << dir);
}

// `j` without the process and residency file ids in it: a merged file numbers those of its later
// parts anew.
json without_process_ids(json j) {
    if (j.is_object()) {
        if (j.contains("bucket_pages") && j.contains("samples")) j.erase("id"); // residency
        for (const char* key : {"process_id", "peak_process_id", "process_ids"})
            j.erase(key);
        for (auto& [key, value] : j.items())
            value = without_process_ids(value);
    } else if (j.is_array()) {
        for (json& value : j)
            value = without_process_ids(value);
    }
    return j;
}

} // namespace

BOOST_AUTO_TEST_SUITE(merge)

BOOST_AUTO_TEST_CASE(parts_are_the_inputs_shifted_by_their_offsets) {
    const Inputs& in = inputs();
    const Recording merged(in.job);
    const std::vector<RecordingPart> parts = merged.parts();
    BOOST_TEST_REQUIRE(parts.size() == 2u);
    BOOST_TEST(merged.schema() == recording_schema_version);
    BOOST_TEST(parts[0].name == "node1");
    BOOST_TEST(parts[1].name == "node2");
    BOOST_TEST(parts[0].offset_ms == 0);
    const std::int64_t offset = (start_ns(in.b) - start_ns(in.a)) / 1'000'000;
    BOOST_TEST(offset >= 1000);
    BOOST_TEST(parts[1].offset_ms == offset);
    BOOST_TEST(*merged.meta_number("start_unix_ns") == start_ns(in.a));

    const RecordingData data = merged.read_all();
    const auto a = Recording(in.a).processes(), b = Recording(in.b).processes();
    BOOST_TEST(data.processes.size() == a.size() + b.size());
    for (const ProcessInfo& p : data.processes)
        BOOST_TEST((p.part == 1 || p.part == 2));
    // Rows in time order across the parts, as in any recording.
    for (std::size_t i = 1; i < data.fast.size(); ++i)
        BOOST_TEST_REQUIRE(data.fast[i - 1].t_ms <= data.fast[i].t_ms);

    const std::int64_t offsets[] = {0, offset};
    const std::string files[] = {in.a, in.b};
    for (int part = 1; part <= 2; ++part) {
        std::map<std::int64_t, std::int64_t> expected;
        for (const auto& [t, kib] :
             rss_sums(files[part - 1], [](const ProcessInfo&) { return true; }))
            expected[t + offsets[part - 1]] = kib;
        const auto got = rss_sums(in.job, [part](const ProcessInfo& p) { return p.part == part; });
        BOOST_TEST(expected.size() > 5u);
        BOOST_TEST((got == expected), "part " << part << "'s Σ RSS is not its input's, shifted");
    }
}

BOOST_AUTO_TEST_CASE(report_gives_each_part_its_own_peaks_and_the_job_totals) {
    const Inputs& in = inputs();
    const json job = report_json({in.job});
    const json a = report_json({in.a}), b = report_json({in.b});
    const json& merged = job["merged"];
    BOOST_TEST_REQUIRE(merged["parts"].size() == 2u);
    const std::int64_t offset = merged["parts"][1]["offset_ms"].get<std::int64_t>();
    const json* own[] = {&a, &b};
    for (int i = 0; i < 2; ++i) {
        const json& part = merged["parts"][i];
        BOOST_TEST(part["step"] == (*own[i])["meta"]["slurm_step_id"]);
        BOOST_TEST(part["job"] == job_id);
        BOOST_TEST(part["duration_ms"] == (*own[i])["duration_ms"]);
        BOOST_TEST_REQUIRE(part["schedulers"].size() == (*own[i])["schedulers"].size());
        for (std::size_t k = 0; k < part["schedulers"].size(); ++k) {
            const json& mine = part["schedulers"][k];
            const json& theirs = (*own[i])["schedulers"][k];
            BOOST_TEST(mine["key"] == theirs["key"]);
            BOOST_TEST(mine["peak_kib"] == theirs["peak_kib"], mine["key"]);
            if (!theirs["peak_ms"].is_null())
                BOOST_TEST(mine["peak_ms"].get<std::int64_t>() ==
                           theirs["peak_ms"].get<std::int64_t>() + (i ? offset : 0));
        }
        std::vector<std::string> kinds;
        for (const json& f : (*own[i])["findings"])
            kinds.push_back(f["kind"]);
        BOOST_TEST((part["findings"].get<std::vector<std::string>>() == kinds));
    }

    // The job's Σ RSS at each tick where both nodes ran, by hand from the inputs' own reports:
    // each node's latest value at or before the tick, on its own clock.
    const auto total = points_of(job, "slurm_linux");
    const auto pa = points_of(a, "slurm_linux"), pb = points_of(b, "slurm_linux");
    auto latest = [](const auto& points, std::int64_t t) -> std::optional<std::int64_t> {
        auto it = points.upper_bound(t);
        if (it == points.begin()) return std::nullopt;
        return std::prev(it)->second;
    };
    const std::int64_t a_end = a["duration_ms"],
                       b_end = offset + b["duration_ms"].get<std::int64_t>();
    int checked = 0;
    for (const auto& [t, kib] : total) {
        if (t < offset || t > std::min(a_end, b_end)) continue;
        const auto va = latest(pa, t), vb = latest(pb, t - offset);
        if (!va || !vb) continue;
        BOOST_TEST((kib == std::optional(*va + *vb)),
                   "at " << t << " ms: " << kib.value_or(-1) << " != " << *va << " + " << *vb);
        ++checked;
    }
    BOOST_TEST(checked >= 5, checked << " ticks where both ran");
    // And where only node1 ran, node1 alone.
    for (const auto& [t, kib] : total)
        if (t < offset && latest(pa, t)) BOOST_TEST((kib == latest(pa, t)), "at " << t << " ms");

    BOOST_TEST_REQUIRE(merged["totals"].size() == 6u);
    for (const json& t : merged["totals"]) {
        std::optional<std::int64_t> highest;
        std::string highest_part;
        for (int i = 0; i < 2; ++i)
            for (const json& v : (*own[i])["schedulers"])
                if (v["key"] == t["key"] && !v["peak_kib"].is_null() &&
                    (!highest || v["peak_kib"].get<std::int64_t>() > *highest)) {
                    highest = v["peak_kib"].get<std::int64_t>();
                    highest_part = i ? "node2" : "node1";
                }
        if (highest) BOOST_TEST(t["highest_part"] == highest_part, t["key"]);
    }
    // The ordinary keys still hold the whole job: every process, and the totals' views.
    BOOST_TEST(job["processes"].size() == a["processes"].size() + b["processes"].size());
    BOOST_TEST(job["schedulers"].size() == 6u);
}

BOOST_AUTO_TEST_CASE(part_report_is_the_inputs_own) {
    const Inputs& in = inputs();
    const json part = report_json({"--part", "node2", in.job});
    const json own = report_json({in.b});
    BOOST_TEST(part["part"] == "node2");
    for (const char* key :
         {"duration_ms", "schedulers", "totals", "tiers", "epochs", "loader", "growth", "residency",
          "markers", "meta", "findings", "rss_pss_gap", "files", "limit", "cgroup_at_peak"})
        BOOST_TEST((without_process_ids(part[key]) == without_process_ids(own[key])), key);
    BOOST_TEST(part["processes"].size() == own["processes"].size());
    const RunResult text = run({cli_path(), "report", "--part", "node1", in.job});
    BOOST_TEST(text.exit_code == 0);
    BOOST_TEST(text.out.find("part node1 of a merged recording") != std::string::npos);
    const RunResult unknown = run({cli_path(), "report", "--part", "node9", in.job});
    BOOST_TEST(unknown.exit_code == 2);
    BOOST_TEST(unknown.err.find("no part named node9 (its parts: node1, node2)") !=
               std::string::npos);
    const RunResult not_merged = run({cli_path(), "report", "--part", "node1", in.a});
    BOOST_TEST(not_merged.exit_code == 2);
    BOOST_TEST(not_merged.err.find("not a merged recording") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(text_report_states_the_parts_and_the_clocks) {
    const Inputs& in = inputs();
    const RunResult r = run({cli_path(), "report", in.job});
    BOOST_TEST_REQUIRE(r.exit_code == 0, r.err);
    BOOST_TEST(r.out.find("a merge of 2 recordings of SLURM job 4242") != std::string::npos);
    BOOST_TEST(r.out.find("node2 started ") != std::string::npos);
    BOOST_TEST(r.out.find("inter-node clock skew is not measured") != std::string::npos);
    BOOST_TEST(r.out.find("Job totals") != std::string::npos);
}

BOOST_AUTO_TEST_CASE(merged_file_reads_in_every_reader_path) {
    const Inputs& in = inputs();
    const RunResult exported = run({cli_path(), "export", "--format", "json", in.job});
    BOOST_TEST_REQUIRE(exported.exit_code == 0, exported.err);
    const json j = json::parse(exported.out);
    BOOST_TEST(j["parts"].size() == 2u);
    BOOST_TEST(j["schedulers"]["slurm_linux"].size() > 5u);
    for (const char* format : {"csv", "residency-csv"}) {
        const RunResult r = run({cli_path(), "export", "--format", format, in.job});
        BOOST_TEST(r.exit_code == 0, format << ": " << r.err);
    }
    const RunResult tail = run({cli_path(), "tail", "--from-start", in.job}, 20s);
    BOOST_TEST(tail.exit_code == 0, tail.err);
    BOOST_TEST(tail.out.find("recording finished") != std::string::npos);
    const Recording merged(in.job);
    BOOST_TEST((merged.end().state == RecordingEnd::State::finished));
    const std::int64_t b_last = merged.parts()[1].offset_ms + Recording(in.b).last_sample_ms();
    BOOST_TEST(merged.last_sample_ms() >= b_last);
}

BOOST_AUTO_TEST_CASE(refuses_inputs_with_a_reason_and_writes_nothing) {
    const Inputs& in = inputs();
    const TempDir scratch;
    const std::string out = (fs::path(in.job).parent_path() / "refused.db").string();
    require_refused({in.a, in.a, "-o", out}, in.a, "given twice");
    const std::string copy = scratch.file("copy.db");
    fs::copy_file(in.a, copy);
    require_refused({in.a, copy, "-o", out}, copy, "a copy of " + in.a);
    const std::string other_job = scratch.file("other-job.db");
    fs::copy_file(in.b, other_job);
    sqlite_exec(other_job, "UPDATE meta SET value = '9999' WHERE key = 'slurm_job_id'");
    require_refused({in.a, other_job, "-o", out}, other_job,
                    "SLURM job 9999, where " + in.a + " has SLURM job 4242");
    const std::string no_start = scratch.file("no-start.db");
    fs::copy_file(in.b, no_start);
    sqlite_exec(no_start, "DELETE FROM meta WHERE key = 'start_unix_ns'");
    require_refused({in.a, no_start, "-o", out}, no_start, "no wall-clock start");
    require_refused({in.job, in.b, "-o", out}, in.job, "a merged recording (2 parts)");
    const std::string text = scratch.file("notes.txt");
    std::ofstream(text) << "not a recording\n";
    require_refused({in.a, text, "-o", out}, text, "not a loaderlens recording");
    // The output may be none of the inputs, and an existing one is replaced only with --force.
    require_refused({in.a, in.b, "-o", in.a}, "-o " + in.a, "read by this merge");
    require_refused({in.a, in.b, "-o", in.job}, in.job, "file exists (use --force");
    const RunResult forced = run({cli_path(), "merge", "-q", "--force", in.a, in.b, "-o", in.job});
    BOOST_TEST(forced.exit_code == 0, forced.err);
    BOOST_TEST(forced.out == "");
    BOOST_TEST(Recording(in.job).parts().size() == 2u);
}

BOOST_AUTO_TEST_CASE(refuses_a_recording_still_being_written) {
    const Inputs& in = inputs();
    const TempDir scratch;
    const std::string live = scratch.file("live.db");
    Child recorder({"env", std::string("SLURM_JOB_ID=") + job_id, cli_path(), "record", "-q", "-o",
                    live, "--", "sleep", "30"});
    for (int i = 0; i < 100; ++i) {
        try {
            if (Recording(live).meta_number("start_unix_ns")) break;
        } catch (const RecordingError&) {
        }
        std::this_thread::sleep_for(50ms);
    }
    require_refused({in.a, live, "-o", scratch.file("out.db")}, live, "still being written");
}

BOOST_AUTO_TEST_CASE(accepts_a_cut_recording_with_a_warning) {
    const Inputs& in = inputs();
    const TempDir scratch;
    const std::string killed = scratch.file("killed.db");
    {
        Child recorder({"env", std::string("SLURM_JOB_ID=") + job_id, "SLURMD_NODENAME=node3",
                        cli_path(), "record", "-q", "-o", killed, "--", "sleep", "30"});
        std::this_thread::sleep_for(1500ms);
        kill(recorder.pid(), SIGKILL);
        BOOST_REQUIRE(recorder.wait(5s));
    }
    const std::string out = scratch.file("with-cut.db");
    const RunResult r = run({cli_path(), "merge", in.a, killed, "-o", out});
    BOOST_TEST_REQUIRE(r.exit_code == 0, r.err);
    BOOST_TEST(r.err.find("warning: " + killed + ": cut") != std::string::npos, r.err);
    const json report = report_json({out});
    BOOST_TEST(report["merged"]["parts"][1]["end"] == "cut");
    BOOST_TEST(report["merged"]["parts"][1]["name"] == "node3");
}

BOOST_AUTO_TEST_CASE(a_row_of_a_part_that_is_not_there_is_damage) {
    const Inputs& in = inputs();
    const TempDir scratch;
    const std::string damaged = scratch.file("damaged.db");
    fs::copy_file(in.job, damaged);
    sqlite_exec(damaged, "UPDATE processes SET part = 9 WHERE id = 1");
    const RunResult r = run({cli_path(), "report", damaged});
    BOOST_TEST(r.exit_code == 2);
    BOOST_TEST(r.err.find(damaged + ": recording is damaged: processes has rows of part 9") !=
                   std::string::npos,
               r.err);
}

BOOST_AUTO_TEST_SUITE_END()
