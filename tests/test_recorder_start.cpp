// SPDX-License-Identifier: MIT
// Starting a recording over names that are not the recorder's: --force replaces only regular
// files, and a start that fails removes what it created and nothing else.
#include "loaderlens/recorder.hpp"
#include "support.hpp"

#include <boost/test/unit_test.hpp>
#include <filesystem>
#include <sys/stat.h>

namespace fs = std::filesystem;
using namespace loaderlens;
using namespace loaderlens::test;

BOOST_AUTO_TEST_SUITE(recorder_start)

BOOST_AUTO_TEST_CASE(force_leaves_a_fifo_in_a_companions_place) {
    TempDir dir;
    const std::string path = dir.file("run.db");
    make_file(path, 4096);
    BOOST_REQUIRE(::mkfifo((path + "-wal").c_str(), 0600) == 0);
    BOOST_CHECK_THROW(Recorder(path, true), RecorderError);
    BOOST_TEST(fs::is_fifo(path + "-wal"));
    BOOST_TEST(fs::file_size(path) == 4096u); // the old file is kept when the start is refused
}

BOOST_AUTO_TEST_CASE(a_failed_start_removes_only_what_it_created) {
    TempDir dir;
    const std::string path = dir.file("run.db");
    // SQLite cannot create FILE-shm through a link into a directory that does not exist: the
    // start fails after FILE and FILE-wal were made.
    fs::create_symlink(dir.path() / "missing" / "x", path + "-shm");
    BOOST_CHECK_THROW(Recorder(path, false), RecorderError);
    BOOST_TEST(!fs::exists(path));
    BOOST_TEST(!fs::exists(path + "-wal"));
    BOOST_TEST(!fs::exists(path + "-journal"));
    BOOST_TEST(fs::is_symlink(path + "-shm")); // not ours: left as it was
}

BOOST_AUTO_TEST_SUITE_END()
