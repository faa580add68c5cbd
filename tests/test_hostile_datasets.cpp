// SPDX-License-Identifier: MIT
// Damaged datasets: truncated and byte-flipped LMDB environments, damaged .npy files, raw files
// of the wrong size. Every case ends in a run or in one line that names the dataset (exit 2),
// never in SIGBUS, SIGSEGV or SIGABRT inside LMDB, and never in "a worker failed" (exit 1) for
// damage found while reading.
#include "fuzz_file_edit.hpp"
#include "loaderlens/probes/loader.hpp"
#include "loaderlens/probes/mkdata.hpp"
#include "support.hpp"

#include <boost/test/unit_test.hpp>
#include <cstring>
#include <filesystem>
#include <fstream>

using namespace loaderlens::probes;
using namespace loaderlens::test;
namespace fs = std::filesystem;

namespace {

// 64 records of 1 KiB: 25 pages of 4 KiB (2 meta pages, 1 branch page, 22 leaves of 3 records).
std::string make_lmdb(const TempDir& dir, const std::string& name) {
    MkdataOptions options;
    options.kind = DatasetKind::lmdb;
    options.path = dir.file(name);
    options.count = 64;
    options.record_bytes = 1024;
    options.seed = 3;
    make_dataset(options);
    return options.path;
}

// An environment directory `name` whose data.mdb holds `bytes`.
std::string environment_with(const TempDir& dir, const std::string& name,
                             const std::string& bytes) {
    fs::create_directories(dir.file(name));
    write_bytes(dir.file(name) + "/data.mdb", bytes);
    return dir.file(name);
}

constexpr std::size_t page = 4096;

// Each flip loads the dataset in this process; under ASan+UBSan that costs several times more,
// and every fourth flip keeps a case there well under 10 s.
#if defined(__SANITIZE_ADDRESS__)
constexpr int flip_stride = 4;
#else
constexpr int flip_stride = 1;
#endif

std::uint16_t u16_at(const std::string& bytes, std::size_t offset) {
    std::uint16_t value;
    std::memcpy(&value, bytes.data() + offset, sizeof value);
    return value;
}

struct Outcome {
    enum Kind { ran, bad_input, run_failed } kind;
    std::string message;
};

// inspect_dataset and run_loader in this process, main reading every record in order.
Outcome load_in_process(const std::string& dataset, int workers = 0) {
    LoaderOptions options;
    options.dataset = dataset;
    options.pattern.pattern = Pattern::sequential;
    options.pattern.batch = 8;
    options.pattern.workers = workers;
    try {
        run_loader(options);
        return {Outcome::ran, {}};
    } catch (const LoaderRunError& e) {
        return {Outcome::run_failed, e.what()};
    } catch (const std::runtime_error& e) {
        return {Outcome::bad_input, e.what()};
    }
}

// Ran, or refused in one line that starts with the dataset.
void check_clean(const Outcome& outcome, const std::string& dataset, const std::string& what) {
    BOOST_TEST_CONTEXT(what) {
        BOOST_TEST(outcome.kind != Outcome::run_failed, outcome.message);
        if (outcome.kind == Outcome::ran) return;
        BOOST_TEST(outcome.message.rfind(dataset + ": ", 0) == 0, outcome.message);
        BOOST_TEST(outcome.message.find('\n') == std::string::npos, outcome.message);
    }
}

// `loaderlens load`: exit 2 and one line on stderr naming the dataset.
void check_load_refused(const std::vector<std::string>& argv, const std::string& dataset,
                        const std::string& reason) {
    const RunResult result = run(argv, std::chrono::seconds(20));
    BOOST_TEST_CONTEXT(argv[1] << " " << dataset) {
        BOOST_TEST(result.exit_code == 2, result.err);
        BOOST_TEST(lines_of(result.err).size() == 1u, result.err);
        BOOST_TEST(result.err.find(dataset) != std::string::npos, result.err);
        BOOST_TEST(result.err.find(reason) != std::string::npos, result.err);
    }
}

} // namespace

BOOST_AUTO_TEST_SUITE(hostile_datasets)

// The reproducer (an interrupted copy: `truncate -s 8192 lm/data.mdb`) died of SIGBUS
// inside inspect_lmdb; so did every cut that left the meta pages readable.
BOOST_AUTO_TEST_CASE(truncated_lmdb_is_bad_input_at_every_offset) {
    TempDir dir;
    const std::string whole = read_bytes(make_lmdb(dir, "good") + "/data.mdb");
    BOOST_REQUIRE_EQUAL(whole.size(), 25 * page);
    for (std::size_t size : {std::size_t{0}, std::size_t{1}, page - 1, page, 2 * page, 2 * page + 1,
                             whole.size() / 2, whole.size() - page, whole.size() - 1}) {
        const std::string env =
            environment_with(dir, "cut" + std::to_string(size), whole.substr(0, size));
        check_load_refused({cli_path(), "load", env, "-q"}, env,
                           size == 0   ? "data.mdb is empty"
                           : size == 1 ? "not an LMDB environment"
                                       : "truncated");
    }
    // replay checks the dataset in the recorder's own process, before it records anything.
    const std::string env = dir.file("cut" + std::to_string(2 * page));
    check_load_refused({cli_path(), "replay", env, "-q", "-o", dir.file("never.db")}, env,
                       "truncated");
    BOOST_TEST(!fs::exists(dir.file("never.db")));
}

// Every byte of both meta pages, flipped two ways: the page size, the pages in use, the root,
// the flags of the main database, the transaction ids that pick the meta page.
BOOST_AUTO_TEST_CASE(flipped_bytes_in_lmdb_meta_pages) {
    TempDir dir;
    const std::string good = make_lmdb(dir, "good");
    const std::string whole = read_bytes(good + "/data.mdb");
    check_clean(load_in_process(good), good, "undamaged");
    BOOST_TEST(load_in_process(good).kind == Outcome::ran);
    int refused = 0, flip = 0;
    for (std::size_t meta : {std::size_t{0}, page})
        for (std::size_t offset = 0; offset < 152; ++offset)
            for (unsigned char mask : {0x01, 0xff}) {
                if (flip++ % flip_stride != 0) continue;
                std::string bytes = whole;
                bytes[meta + offset] = static_cast<char>(bytes[meta + offset] ^ mask);
                const std::string env = environment_with(dir, "flipped", bytes);
                const Outcome outcome = load_in_process(env);
                refused += outcome.kind == Outcome::bad_input;
                check_clean(outcome, env,
                            "meta at " + std::to_string(meta) + " + " + std::to_string(offset) +
                                " ^ " + std::to_string(mask));
            }
    BOOST_TEST(refused > 100 / flip_stride); // magic, version, page size, pages in use, root...
}

// The page headers, pointer arrays and node headers of the branch page and of the first, a
// middle and the last leaf: what LMDB follows without checking (node offsets, key sizes, child
// page numbers, node flags).
BOOST_AUTO_TEST_CASE(flipped_bytes_in_lmdb_branch_and_leaf_pages) {
    TempDir dir;
    const std::string whole = read_bytes(make_lmdb(dir, "good") + "/data.mdb");
    int refused = 0, cases = 0, flip = 0;
    std::vector<std::size_t> pages; // the branch page, then leaves in key order
    for (std::size_t number = 2; number * page < whole.size(); ++number)
        if (u16_at(whole, number * page + 10) == 0x01) pages.push_back(number);
    BOOST_REQUIRE_EQUAL(pages.size(), 1u);
    const std::size_t branch = pages.front() * page;
    const unsigned children = (u16_at(whole, branch + 12) - 16u) / 2;
    for (unsigned i : {0u, children / 2, children - 1}) {
        std::uint64_t child = 0;
        const std::size_t node = branch + u16_at(whole, branch + 16 + 2 * i);
        std::memcpy(&child, whole.data() + node, 4); // lo, hi: pages below 2^32
        pages.push_back(child & 0xffffffff);
    }
    for (std::size_t number : pages) {
        const std::size_t start = number * page;
        std::vector<std::size_t> offsets;
        for (std::size_t offset = 0; offset < 24; ++offset)
            offsets.push_back(offset);
        const unsigned keys = (u16_at(whole, start + 12) - 16u) / 2;
        for (unsigned i = 0; i < keys; ++i) { // each node's header and the first key byte
            const std::size_t node = u16_at(whole, start + 16 + 2 * i);
            for (std::size_t offset = node; offset < node + 9 && offset < page; ++offset)
                offsets.push_back(offset);
        }
        for (std::size_t offset : offsets)
            for (unsigned char mask : {0x02, 0x80, 0xff}) {
                if (flip++ % flip_stride != 0) continue;
                std::string bytes = whole;
                bytes[start + offset] = static_cast<char>(bytes[start + offset] ^ mask);
                const std::string env = environment_with(dir, "flipped", bytes);
                const Outcome outcome = load_in_process(env);
                ++cases;
                refused += outcome.kind == Outcome::bad_input;
                check_clean(outcome, env,
                            "page " + std::to_string(number) + " + " + std::to_string(offset) +
                                " ^ " + std::to_string(mask));
            }
    }
    BOOST_TEST_MESSAGE(cases << " flips, " << refused << " refused");
    BOOST_TEST(refused > cases / 4);
}

// Damage the first and last records do not show (inspect reads only their paths) is found by
// the reader mid-run: exit 2 naming the dataset, as docs/cli.md promises, not "worker failed" (1).
BOOST_AUTO_TEST_CASE(lmdb_damage_found_mid_run_is_bad_input) {
    TempDir dir;
    const std::string whole = read_bytes(make_lmdb(dir, "good") + "/data.mdb");
    // Record 30's key in its leaf: a node header with an 8-byte key, then the key.
    const std::string key = lmdb_key(30);
    std::size_t at = std::string::npos;
    for (std::size_t found = whole.find(key); found != std::string::npos;
         found = whole.find(key, found + 1))
        if (u16_at(whole, found - 2) == 8 && u16_at(whole, found / page * page + 10) == 0x02)
            at = found;
    BOOST_REQUIRE(at != std::string::npos);
    std::string renamed = whole; // record 30 is no longer there
    renamed[at + 7] = static_cast<char>(0x7f);
    std::string wild = whole; // a node offset of that leaf points past the page
    const std::size_t leaf = at / page * page;
    wild[leaf + 16] = static_cast<char>(0xf0);
    wild[leaf + 17] = static_cast<char>(0xff);
    const std::string missing = environment_with(dir, "missing", renamed);
    const std::string outside = environment_with(dir, "outside", wild);
    for (const std::string workers : {"0", "2"}) {
        for (const std::string& read : {std::string("mmap-view"), std::string("mmap-copy")}) {
            check_load_refused({cli_path(), "load", missing, "-q", "--pattern", "sequential",
                                "--workers", workers, "--read", read},
                               missing, "record 30 is missing");
            check_load_refused({cli_path(), "load", outside, "-q", "--pattern", "sequential",
                                "--workers", workers, "--read", read},
                               outside, "damaged LMDB page " + std::to_string(leaf / page));
        }
    }
}

BOOST_AUTO_TEST_CASE(damaged_npy_and_raw_are_bad_input) {
    TempDir dir;
    MkdataOptions options;
    options.path = dir.file("good.npy");
    options.count = 16;
    options.sample_shape = {4, 4};
    make_dataset(options);
    const std::string whole = read_bytes(options.path);
    const std::string path = dir.file("damaged.npy");
    for (std::size_t size :
         {std::size_t{0}, std::size_t{1}, std::size_t{8}, std::size_t{9}, std::size_t{63},
          std::size_t{64}, std::size_t{65}, whole.size() / 2, whole.size() - 1}) {
        write_bytes(path, whole.substr(0, size));
        const Outcome outcome = load_in_process(path);
        BOOST_TEST(outcome.kind == Outcome::bad_input, size);
        check_clean(outcome, path, "cut at " + std::to_string(size));
    }
    write_bytes(path, whole + "x"); // a trailing byte
    BOOST_TEST(load_in_process(path).kind == Outcome::bad_input);
    for (std::size_t offset = 0; offset < 128; ++offset) // magic, version, length, dict
        for (unsigned char mask : {0x01, 0x20, 0xff}) {
            std::string bytes = whole;
            bytes[offset] = static_cast<char>(bytes[offset] ^ mask);
            write_bytes(path, bytes);
            check_clean(load_in_process(path), path,
                        "header at " + std::to_string(offset) + " ^ " + std::to_string(mask));
        }
    // Raw records: the size must be a multiple of --record-size.
    write_bytes(dir.file("odd.raw"), std::string(1000, 'x'));
    check_load_refused({cli_path(), "load", dir.file("odd.raw"), "-q", "--record-size", "3"},
                       dir.file("odd.raw"), "is not a multiple of the record size 3");
    check_load_refused({cli_path(), "load", dir.file("odd.raw"), "-q", "--record-size", "2000"},
                       dir.file("odd.raw"), "is not a multiple of the record size 2000");
}

BOOST_AUTO_TEST_SUITE_END()
