// SPDX-License-Identifier: MIT
// The files beside a recording swapped while the command runs (issue 27, N1-N3): whoever can
// write the output directory replaces the markers file with a link to a file only the recording
// user may read, with a FIFO or a link to /dev/zero, or the loader's files with a link to a file
// the loader must not write. The recorder reads only the files it made (through the descriptors
// it kept) and says once what happened to the name; the reference loader writes only through the
// descriptors record handed it. The swap is done by the command itself, at a moment it chooses:
// after it opened the file as a program would, before it writes the line that is waited for.
#include "fuzz_file_edit.hpp"
#include "loaderlens/marker_watch.hpp"
#include "loaderlens/recording.hpp"
#include "replay_support.hpp"
#include "support.hpp"

#include <boost/test/unit_test.hpp>
#include <fcntl.h>
#include <fstream>
#include <thread>

using namespace loaderlens;
using namespace loaderlens::test;

namespace {

const std::string secret_text = "SECRET-KEY-LINE";

// The command: opens the markers file (fd 3, as a program that opened it earlier), runs `swap`
// on its name, writes a marker through fd 3 and waits (at most 20 s) until the recorder has
// acknowledged a sample for a marker through LOADERLENS_SAMPLED.
std::vector<std::string> swapping_command(const std::string& swap) {
    return {"/bin/sh", "-c",
            "exec 3>>\"$LOADERLENS_MARKERS\"\n" + swap +
                "\necho 'after the swap' >&3\n"
                "i=0; while [ ! -s \"$LOADERLENS_SAMPLED\" ] && [ $i -lt 400 ]; do "
                "sleep 0.05; i=$((i+1)); done\n"
                "[ -s \"$LOADERLENS_SAMPLED\" ]"};
}

std::vector<std::string> marker_texts(const std::string& recording) {
    std::vector<std::string> texts;
    for (const auto& marker : Recording(recording).markers())
        texts.push_back(marker.text);
    return texts;
}

bool contains(const std::vector<std::string>& texts, const std::string& part) {
    return std::any_of(texts.begin(), texts.end(),
                       [&](const std::string& t) { return t.find(part) != std::string::npos; });
}

struct SwapRun {
    TempDir dir;
    std::string db = dir.file("run.db");
    std::string secret = dir.file("secret.txt");
    RunResult result;

    explicit SwapRun(const std::string& swap) {
        std::ofstream(secret) << secret_text << " 1\n" << secret_text << " 2\n";
        std::vector<std::string> argv{cli_path(), "record", "-q", "-o", db, "--"};
        const auto command = swapping_command(swap);
        argv.insert(argv.end(), command.begin(), command.end());
        // A recorder that blocks on a FIFO never ends: the timeout makes that a failure.
        result = run(argv, std::chrono::seconds(60));
    }
};

} // namespace

BOOST_AUTO_TEST_SUITE(sidecar_swaps)

// Every kind of file the name can be swapped for. Each run must end (a FIFO opened for reading
// blocks until a writer comes), keep the marker written to the file record made, never read the
// private file, and say once what the name became.
BOOST_AUTO_TEST_CASE(a_markers_file_swapped_for_anything_is_never_read_through_its_name) {
    struct Swap {
        std::string kind, command;
    };
    const std::string to = "\"$LOADERLENS_MARKERS\"";
    const std::string secret = "\"$(dirname " + to + ")/secret.txt\"";
    const std::vector<Swap> swaps{
        {"a symbolic link", "rm " + to + "; ln -s " + secret + " " + to},
        {"a FIFO", "rm " + to + "; mkfifo " + to},
        {"a symbolic link", "rm " + to + "; ln -s /dev/zero " + to},
        {"a directory", "rm " + to + "; mkdir " + to},
        {"a regular file", "cp " + secret + " " + to + ".new; mv " + to + ".new " + to},
        {"a regular file", "rm " + to + "; ln " + secret + " " + to},
    };
    for (const Swap& swap : swaps) {
        BOOST_TEST_CONTEXT(swap.command) {
            SwapRun r(swap.command);
            BOOST_TEST(r.result.exit_code == 0,
                       "exit " << r.result.exit_code << ": " << r.result.err);
            BOOST_TEST(r.result.err.find("bad_alloc") == std::string::npos, r.result.err);
            const auto texts = marker_texts(r.db);
            BOOST_TEST(!contains(texts, secret_text)); // the private file is never read
            BOOST_TEST(contains(texts, "after the swap"));
            BOOST_TEST(r.result.err.find("replaced by " + swap.kind) != std::string::npos,
                       r.result.err);
            BOOST_TEST(mentions(r.result.err, r.db + ".markers"), r.result.err);
            BOOST_TEST(lines_of(r.result.err).size() == 1u, r.result.err);
            BOOST_TEST(read_bytes(r.secret).find(secret_text + " 2") != std::string::npos);
        }
    }
}

// A markers file the user named (LOADERLENS_MARKERS set before record): followed by its name,
// but never through a link and only while it is a regular file.
BOOST_AUTO_TEST_CASE(a_users_markers_file_swapped_for_a_link_is_no_longer_read) {
    TempDir dir;
    const std::string db = dir.file("run.db"), markers = dir.file("mine.markers");
    const std::string secret = dir.file("secret.txt");
    std::ofstream(secret) << secret_text << "\n";
    std::ofstream(markers) << "before the swap\n";
    const RunResult result =
        run({"/usr/bin/env", "LOADERLENS_MARKERS=" + markers, cli_path(), "record", "-q", "-o", db,
             "--", "/bin/sh", "-c",
             // Waits for the first marker's acknowledgement, swaps, then appends to the new target
             // until the recorder has looked at the name again (a second acknowledgement would need
             // a marker it must not read: the run ends after the recorder's next fast tick).
             "i=0; while [ ! -s \"$LOADERLENS_SAMPLED\" ] && [ $i -lt 400 ]; do sleep 0.05; "
             "i=$((i+1)); done\n"
             "rm \"$LOADERLENS_MARKERS\"; ln -s \"" +
                 secret + "\" \"$LOADERLENS_MARKERS\"\necho 'through the link' >> \"" + secret +
                 "\"\nsleep 1"});
    BOOST_TEST(result.exit_code == 0,
               "exit " << result.exit_code << ": " << result.err << result.out);
    const auto texts = marker_texts(db);
    BOOST_TEST(contains(texts, "before the swap"));
    BOOST_TEST(!contains(texts, secret_text));
    BOOST_TEST(!contains(texts, "through the link"));
    BOOST_TEST(result.err.find("a symbolic link") != std::string::npos, result.err);
}

// The loader under record: its markers go through the descriptor record handed over, never
// through the name, which the command swapped for a link to a file it must not write.
BOOST_AUTO_TEST_CASE(the_loader_writes_markers_through_the_descriptor_record_handed_over) {
    TempDir dir;
    const std::string dataset = dir.file("d.npy"), db = dir.file("run.db");
    const std::string victim = dir.file("victim.txt");
    mkdata({"npy", dataset, "--count", "64", "--shape", "16"});
    std::ofstream(victim) << "untouched\n";
    const RunResult result =
        run({cli_path(), "record", "-q", "-o", db, "--", "/bin/sh", "-c",
             "rm \"$LOADERLENS_MARKERS\"; ln -s \"" + victim +
                 "\" \"$LOADERLENS_MARKERS\"; exec \"$0\" load -q --workers 1 --batch 8 \"$1\"",
             cli_path(), dataset});
    BOOST_TEST(result.exit_code == 0,
               "exit " << result.exit_code << ": " << result.err << result.out);
    BOOST_TEST(read_bytes(victim) == "untouched\n");
    const auto texts = marker_texts(db);
    BOOST_TEST(contains(texts, "epoch 0 end"), [&] {
        std::string all;
        for (const auto& t : texts)
            all += t + "; ";
        return all;
    }());
}

// replay's events file, swapped for a link to a victim file over and over while the run lasts
// (the reproducer that won 5 of 5 runs when the loader opened the name): never written through.
BOOST_AUTO_TEST_CASE(the_loader_events_file_swapped_during_replay_is_never_followed) {
    TempDir dir;
    const std::string dataset = dir.file("d.npy"), db = dir.file("run.db");
    const std::string victim = dir.file("victim.txt");
    mkdata({"npy", dataset, "--count", "256", "--shape", "1024"});
    std::ofstream(victim) << "untouched\n";
    std::atomic<bool> done{false};
    std::thread swapper([&] {
        const std::string events = db + ".loader", link = dir.file("link.tmp");
        // From the moment replay made the file (before, the name would be refused as taken).
        while (!done.load() &&
               !std::filesystem::is_regular_file(std::filesystem::symlink_status(events)))
            std::this_thread::yield();
        while (!done.load()) {
            std::error_code ignored;
            std::filesystem::create_symlink(victim, link, ignored);
            std::filesystem::rename(link, events, ignored);
            std::this_thread::yield();
        }
    });
    const RunResult result = run({cli_path(), "replay", "-q", "-o", db, "--workers", "2", "--batch",
                                  "8", "--epochs", "2", dataset},
                                 std::chrono::seconds(120));
    done = true;
    swapper.join();
    BOOST_TEST(result.exit_code == 0,
               "exit " << result.exit_code << ": " << result.err << result.out);
    BOOST_TEST(read_bytes(victim) == "untouched\n");
    BOOST_TEST(Recording(db).loader_run().epochs.size() == 2u);
}

// The watch that wakes the fast tier the moment a marker is appended (docs/recording.md,
// "Markers"): the file record made is watched through its descriptor, a user's name under its
// directory without following it. Each wait ends at the event; 5 s is only the bound of a broken
// watch (its wake would then come at the next tick, 100 ms, and the marker lose its few-ms time).
BOOST_AUTO_TEST_CASE(the_marker_watch_wakes_for_the_file_record_made_and_for_a_users_name) {
    TempDir dir;
    const std::string made = dir.file("run.db.markers");
    const int fd = ::open(made.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    const int directory = ::open(dir.path().c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC);
    BOOST_REQUIRE(fd >= 0 && directory >= 0);
    {
        MarkerWatch own(Sidecar{fd, directory, "run.db.markers", made});
        BOOST_REQUIRE_MESSAGE(own.active(), own.problem());
        std::ofstream(made, std::ios::app) << "epoch 0 end\n";
        BOOST_TEST((own.wait(5000) == MarkerWatch::Wake::file_changed));
    }
    const std::string mine = dir.file("mine.markers"), victim = dir.file("victim");
    std::ofstream(victim) << "";
    {
        MarkerWatch users(Sidecar{-1, directory, "mine.markers", mine});
        BOOST_REQUIRE_MESSAGE(users.active(), users.problem());
        std::ofstream(mine, std::ios::app) << "epoch 0 end\n"; // made after the watch began
        BOOST_TEST((users.wait(5000) == MarkerWatch::Wake::file_changed));
        std::ofstream(mine, std::ios::app) << "epoch 1 end\n";
        BOOST_TEST((users.wait(5000) == MarkerWatch::Wake::file_changed));
        // Swapped for a link: the rename is seen, then the link's target is not watched.
        std::filesystem::create_symlink(victim, dir.file("link"));
        std::filesystem::rename(dir.file("link"), mine);
        BOOST_TEST((users.wait(5000) == MarkerWatch::Wake::file_changed));
        std::ofstream(victim, std::ios::app) << "not a marker\n";
        BOOST_TEST((users.wait(300) == MarkerWatch::Wake::timeout));
    }
    ::close(fd);
    ::close(directory);
}

BOOST_AUTO_TEST_SUITE_END()
