// SPDX-License-Identifier: MIT
// HDF5 datasets in the reference loader: what `mkdata hdf5` writes is what h5py reads, what the
// loader reads of a file h5py wrote is what h5py reads (checksum and bytes, opened in main before
// fork and in each worker), and bad input is one line with exit 2. docs/hdf5.md.
#include "hdf5_support.hpp"

#include <boost/test/unit_test.hpp>
#include <fstream>

using namespace loaderlens::test;

namespace {

// `loaderlens ARGS...` must fail with exit 2 and one line that names `names`.
void require_one_line_error(const std::vector<std::string>& args, const std::string& names,
                            const std::string& says) {
    std::vector<std::string> argv{cli_path()};
    argv.insert(argv.end(), args.begin(), args.end());
    const RunResult result = run(argv);
    BOOST_TEST_CONTEXT(args.back() << ": " << result.err) {
        BOOST_TEST(result.exit_code == 2);
        BOOST_TEST(lines_of(result.err).size() == 1u);
        BOOST_TEST(result.err.find(names) != std::string::npos);
        BOOST_TEST(result.err.find(says) != std::string::npos);
        BOOST_TEST(result.out.empty());
    }
}

std::uint64_t checksum_of(const nlohmann::json& summary) {
    return summary.at("checksum").get<std::uint64_t>();
}

} // namespace

BOOST_AUTO_TEST_SUITE(hdf5)

// The same seed gives the same records in every container: h5py's reading of the HDF5 file must
// equal numpy's reading of the .npy twin (itself checked against numpy in the datasets suite),
// contiguous, chunked and gzip; and the file says what it was asked to be.
BOOST_AUTO_TEST_CASE(h5py_reads_what_mkdata_writes, *LOADERLENS_MAY_SKIP) {
    if (!have_h5py()) return;
    TempDir dir;
    struct Case {
        std::string dtype, shape, chunks, gzip, expect_chunks;
    };
    const std::vector<Case> cases{{"f4", "3x8x8", "", "", "None"},
                                  {"u1", "64x16", "4x64x16", "", "(4, 64, 16)"},
                                  {"i8", "5", "7x5", "6", "(7, 5)"},
                                  {"f2", "3x3", "", "", "None"},
                                  {"b1", "9", "10x3", "1", "(10, 3)"}};
    for (const Case& c : cases) {
        const std::string h5 = dir.file(c.dtype + ".h5"), npy = dir.file(c.dtype + ".npy");
        std::vector<std::string> args{"hdf5",  h5,        "--count", "37",     "--shape",
                                      c.shape, "--dtype", c.dtype,   "--seed", "11"};
        if (!c.chunks.empty()) args.insert(args.end(), {"--chunks", c.chunks});
        if (!c.gzip.empty()) args.insert(args.end(), {"--gzip", c.gzip});
        mkdata(args);
        mkdata(
            {"npy", npy, "--count", "37", "--shape", c.shape, "--dtype", c.dtype, "--seed", "11"});
        const RunResult result = python(R"(import sys, h5py, numpy as np
d = h5py.File(sys.argv[1], 'r')['data']
a = np.load(sys.argv[2])
print(d.shape == a.shape, d.dtype == a.dtype, bool((d[...] == a).all()), d.chunks,
      d.compression, d.compression_opts))",
                                        {h5, npy});
        BOOST_TEST_INFO(c.dtype << ": " << result.err);
        BOOST_TEST(result.out == "True True True " + c.expect_chunks + " " +
                                     (c.gzip.empty() ? "None None" : "gzip " + c.gzip) + "\n");
    }
}

// Files h5py wrote (contiguous; chunked with gzip and shuffle, big-endian; a dataset in a group;
// chunks that do not divide the shape): the loader's checksum and bytes equal numpy's over
// h5py's reading, with the file opened in main before fork and in each worker, and in main alone.
BOOST_AUTO_TEST_CASE(loader_reads_files_h5py_writes, *LOADERLENS_MAY_SKIP) {
    if (!have_h5py()) return;
    TempDir dir;
    const RunResult made = python(R"(import sys, h5py, numpy as np
r = np.random.default_rng(5)
with h5py.File(sys.argv[1] + '/plain.h5', 'w') as f:
    f['data'] = r.random((300, 3, 40)).astype('<f4')
with h5py.File(sys.argv[1] + '/packed.h5', 'w') as f:
    f.create_dataset('g/images', data=r.integers(-999, 999, (257, 2, 1030)).astype('>i2'),
                     chunks=(10, 2, 512), compression='gzip', shuffle=True)
    f['labels'] = np.arange(257))",
                                  {dir.path().string()});
    BOOST_REQUIRE_MESSAGE(made.exit_code == 0, made.err);
    struct Case {
        std::string file, dataset;
    };
    for (const Case& c : {Case{"plain.h5", ""}, Case{"packed.h5", "g/images"}}) {
        const std::string path = dir.file(c.file);
        const RunResult oracle =
            python(h5py_checksum_script, {path, c.dataset.empty() ? "data" : c.dataset});
        BOOST_REQUIRE_MESSAGE(oracle.exit_code == 0, oracle.err);
        const auto words = lines_of(oracle.out).at(0);
        const std::uint64_t expected = std::stoull(words.substr(0, words.find(' ')));
        const std::int64_t bytes = std::stoll(words.substr(words.find(' ') + 1));
        for (const std::vector<std::string>& mode :
             {std::vector<std::string>{"--workers", "3", "--hdf5-open", "parent"},
              {"--workers", "3", "--hdf5-open", "worker"},
              {"--workers", "0"}}) {
            std::vector<std::string> args{"--pattern", "sequential", "--batch", "1"};
            args.insert(args.end(), mode.begin(), mode.end());
            if (!c.dataset.empty()) args.insert(args.end(), {"--hdf5-dataset", c.dataset});
            args.insert(args.end(), {"--", path});
            const nlohmann::json summary = load_json(args);
            BOOST_TEST_CONTEXT(c.file << " " << mode[1] << " " << mode.back()) {
                BOOST_TEST(checksum_of(summary) == expected);
                BOOST_TEST(summary["epochs"][0]["bytes_read"].get<std::int64_t>() == bytes);
            }
        }
    }
}

// Without Python: the HDF5 file and its .npy twin hold the same records, so the loader must sum
// the same over both, shuffled, in every open mode and chunk cache (none, default, large).
BOOST_AUTO_TEST_CASE(same_checksum_as_the_npy_twin) {
    TempDir dir;
    const std::string h5 = dir.file("d.hdf5"), npy = dir.file("d.npy");
    mkdata({"hdf5", h5, "--count", "500", "--shape", "3x1000", "--dtype", "u2", "--chunks",
            "16x3x1000", "--gzip", "1"});
    mkdata({"npy", npy, "--count", "500", "--shape", "3x1000", "--dtype", "u2"});
    const std::vector<std::string> common{"--workers", "2", "--batch", "7", "--epochs", "2"};
    auto args = common;
    args.insert(args.end(), {"--", npy});
    const std::uint64_t expected = checksum_of(load_json(args));
    for (const auto& [open, cache] : std::vector<std::pair<std::string, std::string>>{
             {"parent", "0"}, {"worker", "0"}, {"parent", "8MiB"}, {"worker", "1MiB"}}) {
        args = common;
        args.insert(args.end(), {"--hdf5-open", open, "--chunk-cache", cache, "--", h5});
        BOOST_TEST(checksum_of(load_json(args)) == expected, open << " " << cache);
    }
}

// Bad input: one line naming the file (and the dataset), exit 2; HDF5 prints nothing of its own.
BOOST_AUTO_TEST_CASE(bad_input_is_one_line, *LOADERLENS_MAY_SKIP) {
    TempDir dir;
    const std::string fake = dir.file("fake.h5");
    make_file(fake, 100000);
    require_one_line_error({"load", "--", fake}, fake, "not an HDF5 file");
    const std::string good = dir.file("good.h5");
    mkdata({"hdf5", good, "--count", "64", "--shape", "1024", "--dtype", "u1", "--chunks", "8x1024",
            "--gzip", "5"});
    require_one_line_error({"load", "--hdf5-dataset", "nope", "--", good}, good, "/nope");
    require_one_line_error({"load", "--chunk-cache", "lots", "--", good}, "--chunk-cache", "size");
    require_one_line_error({"load", "--advice", "random", "--", good}, "--advice", "HDF5");
    // Cut: HDF5 compares the end of file it stored with the file's size.
    const std::string cut = dir.file("cut.h5");
    std::filesystem::copy_file(good, cut);
    std::filesystem::resize_file(cut, std::filesystem::file_size(good) / 2);
    require_one_line_error({"load", "--", cut}, cut, "truncated");
    // A damaged chunk the inspection does not read: found by the worker that reads it.
    const std::string damaged = dir.file("damaged.h5");
    std::filesystem::copy_file(good, damaged);
    {
        std::fstream file(damaged, std::ios::in | std::ios::out | std::ios::binary);
        file.seekp(static_cast<std::streamoff>(std::filesystem::file_size(damaged)) - 300);
        file.write(std::string(64, '\xff').data(), 64);
    }
    require_one_line_error({"load", "--workers", "2", "--", damaged}, damaged, "cannot be read");
    require_one_line_error({"mkdata", "hdf5", dir.file("x.h5"), "--count", "4", "--gzip", "3"},
                           "--gzip", "--chunks");
    require_one_line_error(
        {"mkdata", "hdf5", dir.file("x.h5"), "--count", "4", "--shape", "", "--dtype", "u1"},
        "--shape", "rank");
    BOOST_TEST(!std::filesystem::exists(dir.file("x.h5")));

    if (!have_h5py()) return;
    const std::string odd = dir.file("odd.h5");
    const RunResult made = python(R"(import sys, h5py, numpy as np
with h5py.File(sys.argv[1], 'w') as f:
    f['flat'] = np.zeros(10, 'f4')
    f['pairs'] = np.zeros((4, 2), dtype=[('x', '<f4'), ('y', '<i8')])
    f['names'] = np.array([[b'ab', b'cd']] * 3)
    f.create_dataset('ragged', (4, 2), dtype=h5py.vlen_dtype('f4'))
    f['more'] = np.zeros((4, 2), 'f4'))",
                                  {odd});
    BOOST_REQUIRE_MESSAGE(made.exit_code == 0, made.err);
    require_one_line_error({"load", "--", odd}, odd, "no dataset /data");
    for (const auto& [name, says] :
         std::vector<std::pair<std::string, std::string>>{{"flat", "rank 1"},
                                                          {"pairs", "compound"},
                                                          {"names", "string"},
                                                          {"ragged", "variable-length"}})
        require_one_line_error({"load", "--hdf5-dataset", name, "--", odd},
                               odd + ": dataset /" + name, says);
}

BOOST_AUTO_TEST_SUITE_END()
