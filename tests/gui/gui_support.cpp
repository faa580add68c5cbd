// SPDX-License-Identifier: MIT
#include "gui_support.hpp"

#include "../replay_support.hpp"
#include "loaderlens/recording.hpp"

#include <filesystem>
#include <map>
#include <memory>
#include <QColor>
#include <set>

namespace loaderlens::test {

namespace {

TempDir& data_dir() {
    static TempDir dir;
    return dir;
}

} // namespace

const std::string& small_dataset() {
    static const std::string path = [] {
        const std::string p = data_dir().file("images.npy");
        mkdata({"npy", p, "--count", "2048", "--shape", "3x32x32", "--dtype", "f4"}); // 24 MiB
        return p;
    }();
    return path;
}

const std::string& scenario_recording(int scenario) {
    static std::map<int, std::string> made;
    auto it = made.find(scenario);
    if (it != made.end()) return it->second;
    const std::string out = data_dir().file("scenario" + std::to_string(scenario) + ".db");
    // Scenarios 1 and 7 last 2-3 s, less than the maps tier's 5 s: it reads smaps every 250 ms
    // here, with the CPU budget to do so on a loaded machine, so the Files view has lines.
    if (scenario == 1) {
        replay(out, {small_dataset(), "--workers", "4", "--batch", "32", "--epochs", "2",
                     "--pattern", "shuffle", "--step-time", "10ms", "--epoch-pause", "300ms",
                     "--interval", "residency=250ms", "maps=250ms", "--cpu-budget", "50%"});
    } else if (scenario == 4) {
        const std::string db = data_dir().file("data.lmdb");
        mkdata({"lmdb", db, "--count", "800", "--value-size", "128KiB"}); // 100 MiB
        replay(out, {db, "--workers", "4", "--batch", "1", "--prefetch", "1", "--epochs", "3",
                     "--pattern", "random", "--num-samples", "64", "--step-time", "30ms",
                     "--persistent"});
    } else if (scenario == 7) {
        const std::string raw = data_dir().file("data.raw");
        mkdata({"raw", raw, "--count", "1024", "--record-size", "16KiB"}); // 16 MiB
        replay(out, {raw,          "--record-size", "16KiB",        "--epochs",
                     "4",          "--persistent",  "--step-time",  "20ms",
                     "--interval", "rollup=250ms",  "--workers",    "2",
                     "--read",     "pread",         "--cow-heap",   "64",
                     "--interval", "maps=250ms",    "--cpu-budget", "50%"});
    } else {
        BOOST_FAIL("no scenario " + std::to_string(scenario) + " in the GUI tests");
    }
    return made[scenario] = out;
}

int worker_slots_of(const std::string& path) {
    Recording recording(path);
    std::set<int> slot_numbers;
    for (const ProcessInfo& p : recording.processes())
        if (p.role == Role::worker && p.slot >= 0) slot_numbers.insert(p.slot);
    return static_cast<int>(slot_numbers.size());
}

std::string screenshot_dir() {
    std::string dir = qEnvironmentVariable("LOADERLENS_GUI_SHOTS").toStdString();
    if (dir.empty()) dir = (std::filesystem::current_path() / "gui-screenshots").string();
    std::filesystem::create_directories(dir);
    return dir;
}

int coloured_pixels(const QImage& image, const QRect& area) {
    const QRect clipped = area.intersected(image.rect());
    int count = 0;
    for (int y = clipped.top(); y <= clipped.bottom(); ++y)
        for (int x = clipped.left(); x <= clipped.right(); ++x) {
            const QColor c = image.pixelColor(x, y);
            if (c.hsvSaturation() > 60 && c.value() > 40) ++count;
        }
    return count;
}

std::vector<std::string> long_replay(const std::string& dataset, const std::string& output,
                                     int seconds) {
    // 2048 samples / 32 per batch = 64 batches per epoch over 2 workers: 32 steps each.
    const int step_ms = 25;
    const int epochs = std::max(1, seconds * 1000 / (32 * step_ms));
    return {cli_path(),
            "replay",
            "-q",
            "--force",
            "-o",
            output,
            dataset,
            "--workers",
            "2",
            "--epochs",
            std::to_string(epochs),
            "--step-time",
            std::to_string(step_ms) + "ms"};
}

} // namespace loaderlens::test
