// SPDX-License-Identifier: MIT
// Every number printed twice is the same number (issue 26): real replays of the reference loader
// read by `report`, `report --json`, `export` (json, csv, openmetrics) and `check`, every figure
// they share compared (tests/consumers_agree.hpp). The dashboard's models: tests/gui.
#include "consumers_agree.hpp"
#include "precondition.hpp"
#include "replay_support.hpp"

#include <boost/test/unit_test.hpp>

using namespace loaderlens;
using namespace loaderlens::test;

BOOST_AUTO_TEST_SUITE(consumers_agree)

// np.load(mmap_mode='r')'s pattern: 3 workers re-forked each epoch map a .npy and read it.
BOOST_AUTO_TEST_CASE(npy_mmap_three_workers) {
    TempDir dir;
    const std::string data = dir.file("x.npy"), out = dir.file("npy.db");
    mkdata({"npy", data, "--count", "2048", "--shape", "3x32x32", "--dtype", "f4"}); // 24 MiB
    replay(out, {data, "--workers", "3", "--batch", "32", "--epochs", "2", "--pattern", "shuffle",
                 "--step-time", "10ms", "--interval", "maps=250ms", "rollup=250ms", "--cpu-budget",
                 "50%"});
    BOOST_TEST(check_consumers_agree(out) > 50);
}

// LMDB with persistent workers over 3 epochs: per-file figures grow across epochs.
BOOST_AUTO_TEST_CASE(lmdb_persistent_workers_epochs) {
    TempDir dir;
    const std::string db = dir.file("data.lmdb"), out = dir.file("lmdb.db");
    mkdata({"lmdb", db, "--count", "400", "--value-size", "128KiB"}); // 50 MiB
    replay(out, {db, "--workers", "3", "--batch", "1", "--prefetch", "1", "--epochs", "3",
                 "--pattern", "random", "--num-samples", "48", "--step-time", "30ms",
                 "--persistent", "--cpu-budget", "50%"});
    BOOST_TEST(check_consumers_agree(out) > 50);
}

// A limit the run comes near or passes (the recording's --mem-limit), and one given to the
// report and the budget instead: margins, the verdict's limit finding and `check`'s margins.
BOOST_AUTO_TEST_CASE(with_a_memory_limit) {
    TempDir dir;
    const std::string data = dir.file("x.npy"), out = dir.file("limit.db");
    mkdata({"npy", data, "--count", "2048", "--shape", "3x32x32", "--dtype", "f4"}); // 24 MiB
    replay(out, {data, "--workers", "3", "--batch", "32", "--epochs", "2", "--step-time", "10ms",
                 "--interval", "rollup=250ms", "--mem-limit", "64MiB"});
    BOOST_TEST(check_consumers_agree(out) > 50);
    BOOST_TEST(check_consumers_agree(out, {.mem_limit = "80MiB"}) > 50);
}

// Processes whose PSS the recorder may not read (another user's): Σ PSS is partial, never a
// sum that counts them as 0, in every consumer.
BOOST_AUTO_TEST_CASE(partly_unreadable_tree, *LOADERLENS_MAY_SKIP) {
    if (!precondition(can_record_partly_unreadable(),
                      "needs root and setpriv to record root processes as nobody", InCi::must_have))
        return;
    TempDir dir;
    const std::string out = dir.file("partial.db");
    record_partly_unreadable(dir.path(), out);
    BOOST_TEST(check_consumers_agree(out) > 20);
}

BOOST_AUTO_TEST_SUITE_END()
