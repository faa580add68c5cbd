// SPDX-License-Identifier: MIT
// What the reference loader takes from its options and inputs is bounded: a trace must be a
// regular file of bounded size (not /dev/zero, not a FIFO), an epoch lists a bounded number of
// samples, and what would not fit in the machine's memory is refused before anything runs: one
// line, exit 2, never std::bad_alloc, a hang or the OOM killer.
#include "loaderlens/probes/loader.hpp"
#include "loaderlens/probes/mkdata.hpp"
#include "precondition.hpp"
#include "support.hpp"

#include <boost/test/unit_test.hpp>
#include <chrono>
#include <fcntl.h>
#include <filesystem>
#include <fstream>
#include <sys/stat.h>
#include <unistd.h>

using namespace loaderlens::probes;
using namespace loaderlens::test;
using namespace std::chrono_literals;
namespace fs = std::filesystem;

namespace {

std::string make_npy(const TempDir& dir) {
    MkdataOptions options;
    options.path = dir.file("small.npy");
    options.count = 100;
    options.sample_shape = {16};
    make_dataset(options);
    return options.path;
}

// `loaderlens load` refuses within `limit`: exit 2, one line on stderr that names `what`.
void check_refused(const std::vector<std::string>& arguments, const std::string& what,
                   std::chrono::milliseconds limit = 10s) {
    std::vector<std::string> argv{cli_path(), "load", "-q"};
    argv.insert(argv.end(), arguments.begin(), arguments.end());
    const auto start = std::chrono::steady_clock::now();
    const RunResult result = run(argv, limit);
    BOOST_TEST_CONTEXT(what) {
        BOOST_TEST((std::chrono::steady_clock::now() - start < limit));
        BOOST_TEST(result.exit_code == 2, result.err);
        BOOST_TEST(lines_of(result.err).size() == 1u, result.err);
        BOOST_TEST(result.err.find(what) != std::string::npos, result.err);
        BOOST_TEST(result.err.find("bad_alloc") == std::string::npos);
    }
}

std::string error_of(const std::function<void()>& action) {
    try {
        action();
    } catch (const std::exception& e) {
        return e.what();
    }
    return "no error";
}

} // namespace

BOOST_AUTO_TEST_SUITE(loader_limits)

// Before: the whole endless stream went into one string (~12 GB, then bad_alloc or the OOM
// killer).
BOOST_AUTO_TEST_CASE(trace_from_dev_zero_is_refused) {
    TempDir dir;
    check_refused({make_npy(dir), "--pattern", "trace", "--trace", "/dev/zero"},
                  "/dev/zero: not a regular file");
}

// Before: open() waited for a writer forever, or read() for the writer's end.
BOOST_AUTO_TEST_CASE(trace_from_a_fifo_is_refused_at_once) {
    TempDir dir;
    const std::string data = make_npy(dir), fifo = dir.file("trace.fifo");
    BOOST_REQUIRE(mkfifo(fifo.c_str(), 0600) == 0);
    check_refused({data, "--pattern", "trace", "--trace", fifo}, fifo + ": not a regular file");
    // A writer that holds the FIFO open and never writes nor closes.
    const pid_t writer = fork();
    if (writer == 0) {
        const int fd = ::open(fifo.c_str(), O_WRONLY);
        pause();
        _exit(fd < 0);
    }
    ForkGuard guard(writer);
    check_refused({data, "--pattern", "trace", "--trace", fifo}, fifo + ": not a regular file");
}

BOOST_AUTO_TEST_CASE(huge_and_binary_traces_are_refused) {
    TempDir dir;
    const std::string data = make_npy(dir), sparse = dir.file("sparse.trace");
    { std::ofstream{sparse}; }
    fs::resize_file(sparse, std::uintmax_t{100} << 30); // 100 GiB of holes: no disk used
    check_refused({data, "--pattern", "trace", "--trace", sparse},
                  sparse + ": larger than 1073741824 bytes");
    const std::string binary = dir.file("binary.trace");
    std::ofstream(binary) << std::string(1 << 20, '\0'); // no newline at all
    check_refused({data, "--pattern", "trace", "--trace", binary},
                  binary + ":1: '????????????????????????????????????????...' is not a sample "
                           "index");
    check_refused({data, "--pattern", "trace", "--trace", dir.path().string()},
                  "cannot read: Is a directory");
}

BOOST_AUTO_TEST_CASE(trace_files_still_read) {
    TempDir dir;
    const std::string path = dir.file("ok.trace");
    std::ofstream(path) << "# the first three\n0\n  1 \r\n\n2"; // no final newline
    BOOST_TEST(read_trace(path, 10) == (std::vector<std::int64_t>{0, 1, 2}),
               boost::test_tools::per_element());
    std::ofstream(path) << "0\n1\n12\n";
    BOOST_TEST(error_of([&] { read_trace(path, 10); }) ==
               path + ":3: index 12 is out of range: the dataset has 10 samples");
}

// Before: --num-samples 1e12 and --world 1e9 ended in std::bad_alloc (exit 1, C++ text).
BOOST_AUTO_TEST_CASE(epochs_list_a_bounded_number_of_samples) {
    PatternOptions options;
    options.pattern = Pattern::random;
    options.num_samples = 1'000'000'000'000;
    BOOST_TEST(error_of([&] { validate(options, 100); })
                   .find("--num-samples 1000000000000: at "
                         "most 67108864 samples per epoch") == 0u);
    options.num_samples = max_samples_per_epoch;
    BOOST_TEST(error_of([&] { validate(options, std::int64_t{1} << 40); }) == "no error");
    options.num_samples = 0; // the default draws as many as the dataset has
    BOOST_TEST(error_of([&] {
                   validate(options, std::int64_t{1} << 40);
               }).find("--pattern random lists every one") != std::string::npos);
    options.pattern = Pattern::distributed;
    options.world = 1'000'000'000;
    BOOST_TEST(error_of([&] { validate(options, 100); }).find("--world 1000000000: ") == 0u);
    options.world = 8;
    BOOST_TEST(error_of([&] { validate(options, 100); }) == "no error");
    options.pattern = Pattern::shuffle;
    BOOST_TEST(error_of([&] {
                   validate(options, max_samples_per_epoch + 1);
               }).find("the dataset has 67108865 samples: --pattern shuffle") == 0u);
    options.pattern = Pattern::windows;
    options.window = 2;
    BOOST_TEST(error_of([&] {
                   validate(options, std::int64_t{1} << 30);
               }).find("pass --num-samples N") != std::string::npos);
    options.num_samples = 1000;
    BOOST_TEST(error_of([&] { validate(options, std::int64_t{1} << 30); }) == "no error");
}

BOOST_AUTO_TEST_CASE(huge_option_values_are_bad_input) {
    TempDir dir;
    const std::string data = make_npy(dir);
    // The CLI may refuse them itself first; either way one line naming the option.
    check_refused({data, "--pattern", "random", "--num-samples", "1000000000000"},
                  "--num-samples 1000000000000");
    check_refused({data, "--pattern", "distributed", "--world", "1000000000"},
                  "--world 1000000000");
}

// Before: a heap larger than the machine failed to map inside the run (exit 1).
BOOST_AUTO_TEST_CASE(cow_heap_larger_than_memory_is_bad_input, *LOADERLENS_MAY_SKIP) {
    const auto memory_mib = sysconf(_SC_PHYS_PAGES) * sysconf(_SC_PAGESIZE) >> 20;
    if (!precondition(memory_mib < (1 << 20), "this machine has 1 TiB of memory or more",
                      InCi::may_lack))
        return;
    TempDir dir;
    check_refused({make_npy(dir), "--cow-heap", "1048576"},
                  "--cow-heap 1048576 would take 1048576.0 MiB, more than this machine's");
}

BOOST_AUTO_TEST_SUITE_END()
