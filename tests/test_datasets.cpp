// SPDX-License-Identifier: MIT
// Datasets: .npy header reading and writing (numpy itself as the oracle), raw and LMDB layouts,
// deterministic generation and the `loaderlens mkdata` command.
#include "fuzz_file_edit.hpp"
#include "loaderlens/probes/dataset.hpp"
#include "loaderlens/probes/mkdata.hpp"
#include "precondition.hpp"
#include "support.hpp"

#include <boost/test/unit_test.hpp>
#include <filesystem>
#include <fstream>
#include <functional>
#include <lmdb.h>
#include <sstream>

using namespace loaderlens::probes;
using namespace loaderlens::test;
namespace fs = std::filesystem;

namespace {

const std::string system_python = "/usr/bin/python3";

// numpy comes with the distribution's python only (a pyenv python on PATH may lack it). The
// numpy cases are the oracle of the .npy format: CI must have it (setup.sh installs python3-numpy).
bool have_numpy() {
    static const bool available = run({system_python, "-c", "import numpy"}).exit_code == 0;
    return precondition(available, system_python + " cannot import numpy (Debian: python3-numpy)",
                        InCi::must_have);
}

RunResult python(const std::string& script, std::vector<std::string> args = {}) {
    std::vector<std::string> argv{system_python, "-c", script};
    argv.insert(argv.end(), args.begin(), args.end());
    return run(argv);
}

// A .npy file with a hand-written dict, padded like numpy's, and `data_bytes` of data.
void write_npy(const std::string& path, const std::string& dict, std::int64_t data_bytes,
               int version = 1) {
    const std::size_t prefix = version == 1 ? 10 : 12;
    std::string text = dict;
    text.append(63 - (prefix + text.size()) % 64, ' ');
    text += '\n';
    std::string file = "\x93NUMPY";
    file += static_cast<char>(version);
    file += '\0';
    for (std::size_t i = 0; i < prefix - 8; ++i)
        file += static_cast<char>(text.size() >> (8 * i) & 0xff);
    write_bytes(path, file + text + std::string(static_cast<std::size_t>(data_bytes), 'x'));
}

// Runs `action`, which must throw a DatasetError of one line that names `path` and says `what`.
void check_error(const std::function<void()>& action, const std::string& path,
                 const std::string& what) {
    try {
        action();
        BOOST_ERROR("no error for " << path << " (expected: " << what << ")");
    } catch (const DatasetError& e) {
        const std::string message = e.what();
        BOOST_TEST_INFO("message: " << message);
        BOOST_TEST(message.rfind(path + ": ", 0) == 0);
        BOOST_TEST(message.find('\n') == std::string::npos);
        BOOST_TEST(message.find(what) != std::string::npos);
    }
}

void check_npy_error(const std::string& path, const std::string& what) {
    check_error([&] { read_npy_header(path); }, path, what);
}

// An LMDB environment made by some other tool, with these keys and values.
void write_foreign_env(const std::string& dir,
                       const std::vector<std::pair<std::string, std::string>>& records) {
    fs::create_directory(dir);
    MDB_env* env = nullptr;
    MDB_txn* txn = nullptr;
    MDB_dbi dbi = 0;
    BOOST_REQUIRE(mdb_env_create(&env) == 0);
    BOOST_REQUIRE(mdb_env_open(env, dir.c_str(), 0, 0644) == 0);
    BOOST_REQUIRE(mdb_txn_begin(env, nullptr, 0, &txn) == 0);
    BOOST_REQUIRE(mdb_dbi_open(txn, nullptr, 0, &dbi) == 0);
    for (auto [key_text, value_text] : records) {
        MDB_val key{key_text.size(), key_text.data()}, value{value_text.size(), value_text.data()};
        BOOST_REQUIRE(mdb_put(txn, dbi, &key, &value, 0) == 0);
    }
    BOOST_REQUIRE(mdb_txn_commit(txn) == 0);
    mdb_env_close(env);
}

bool one_line(const std::string& text) {
    return !text.empty() && text.find('\n') == text.size() - 1;
}

MkdataOptions npy_options(const std::string& path, std::int64_t count,
                          std::vector<std::int64_t> shape, const std::string& dtype = "f4",
                          std::uint64_t seed = 0) {
    MkdataOptions options;
    options.kind = DatasetKind::npy;
    options.path = path;
    options.count = count;
    options.sample_shape = std::move(shape);
    options.dtype = dtype;
    options.seed = seed;
    return options;
}

MkdataOptions record_options(DatasetKind kind, const std::string& path, std::int64_t count,
                             std::int64_t record_bytes, std::uint64_t seed = 0) {
    MkdataOptions options;
    options.kind = kind;
    options.path = path;
    options.count = count;
    options.record_bytes = record_bytes;
    options.seed = seed;
    return options;
}

} // namespace

BOOST_AUTO_TEST_SUITE(datasets)

BOOST_AUTO_TEST_CASE(npy_header_round_trip) {
    TempDir dir;
    const std::vector<std::pair<std::string, std::int64_t>> dtypes{
        {"<f4", 4}, {"|u1", 1}, {">i8", 8}, {"<f2", 2}, {"|b1", 1}, {"<c16", 16}, {"<U5", 20}};
    const std::vector<std::vector<std::int64_t>> shapes{{5}, {3, 4}, {2, 3, 32, 32}, {7, 0}};
    for (int version : {0, 1, 2, 3})
        for (const auto& [descr, itemsize] : dtypes)
            for (const auto& shape : shapes) {
                const std::string path = dir.file("round.npy");
                const std::string header = make_npy_header(descr, shape, version);
                std::int64_t data_bytes = itemsize;
                for (std::int64_t dim : shape)
                    data_bytes *= dim;
                write_bytes(path, header + std::string(static_cast<std::size_t>(data_bytes), 'd'));
                BOOST_TEST_CONTEXT("version " << version << " " << descr << " ndim "
                                              << shape.size()) {
                    BOOST_TEST(header.size() % 64 == 0);
                    BOOST_TEST(header.back() == '\n');
                    const NpyHeader read = read_npy_header(path);
                    BOOST_TEST(read.major_version == (version == 0 ? 1 : version));
                    BOOST_TEST(read.minor_version == 0);
                    BOOST_TEST(read.descr == descr);
                    BOOST_TEST(read.itemsize == itemsize);
                    BOOST_TEST(!read.fortran_order);
                    BOOST_TEST(read.shape == shape);
                    BOOST_TEST(read.data_offset == static_cast<std::int64_t>(header.size()));
                }
            }
}

BOOST_AUTO_TEST_CASE(npy_header_too_long_for_version_1) {
    TempDir dir;
    const std::vector<std::int64_t> shape(30000, 1); // "(1, 1, ...)": ~90 KB of header
    const std::string header = make_npy_header("<f8", shape);
    BOOST_TEST(header[6] == 2); // the lowest version that fits
    BOOST_TEST(header.size() % 64 == 0);
    BOOST_CHECK_THROW(make_npy_header("<f8", shape, 1), DatasetError);
    write_bytes(dir.file("long.npy"), header + std::string(8, '\0'));
    BOOST_TEST(read_npy_header(dir.file("long.npy")).shape.size() == shape.size());
}

BOOST_AUTO_TEST_CASE(npy_dict_as_python_writes_it) {
    TempDir dir;
    const std::string path = dir.file("dict.npy");
    // Keys in any order, double quotes, no trailing comma, extra spaces, a Python 2 long.
    write_npy(path, "{ \"shape\" : (4, 2L),'fortran_order':False ,  'descr':'<i2'}", 16);
    NpyHeader header = read_npy_header(path);
    BOOST_TEST(header.descr == "<i2");
    BOOST_TEST((header.shape == std::vector<std::int64_t>{4, 2}));
    write_npy(path, "{'descr': '=u4', 'fortran_order': False, 'shape': (5,), }", 20, 3);
    header = read_npy_header(path);
    BOOST_TEST(header.major_version == 3);
    BOOST_TEST((header.shape == std::vector<std::int64_t>{5}));
}

BOOST_AUTO_TEST_CASE(npy_errors_are_one_line_naming_the_file) {
    TempDir dir;
    const std::string path = dir.file("bad.npy");
    auto dict = [](const std::string& descr, const std::string& fortran, const std::string& shape) {
        return "{'descr': " + descr + ", 'fortran_order': " + fortran + ", 'shape': " + shape +
               ", }";
    };
    write_npy(path, dict("'<f4'", "True", "(3, 4)"), 48);
    check_npy_error(path, "Fortran-order arrays are not supported");
    write_npy(path, dict("'|O'", "False", "(3,)"), 24);
    check_npy_error(path, "object arrays are not supported");
    write_npy(path, dict("[('a', '<f4'), ('b', '<i4')]", "False", "(3,)"), 24);
    check_npy_error(path, "structured dtypes are not supported");
    write_npy(path, dict("'<x4'", "False", "(3,)"), 12);
    check_npy_error(path, "unknown dtype descr '<x4'");
    write_npy(path, dict("'<f4'", "False", "()"), 4);
    check_npy_error(path, "no sample axis");
    write_npy(path, dict("'<f4'", "False", "(3, -1)"), 0);
    check_npy_error(path, "non-negative integer");
    write_npy(path, dict("'<f4'", "False", "[3, 4]"), 48);
    check_npy_error(path, "shape is not a tuple");
    write_npy(path, dict("'<f4'", "False", "(512, 512)"), 1000);
    check_npy_error(path, "truncated: the header promises 1048576 data bytes, the file has 1000");
    write_npy(path, dict("'<f4'", "False", "(3,)"), 13);
    check_npy_error(path, "1 trailing bytes after the array data");

    // Broken dicts.
    for (const std::string& broken :
         {std::string("{'descr': '<f4', 'fortran_order': False, 'shape': (3,)"),
          std::string("{'descr': '<f4' 'fortran_order': False, 'shape': (3,)}"),
          std::string("{'descr': '<f4, 'fortran_order': False, 'shape': (3,)}"),
          std::string("{'descr': '<f4', 'fortran_order': Maybe, 'shape': (3,)}"),
          std::string("{'descr': '<f4', 'fortran_order': False, 'shape': (3,)} junk")}) {
        write_npy(path, broken, 12);
        check_npy_error(path, "broken .npy header dict");
    }
    write_npy(path, "{'descr': '<f4', 'shape': (3,)}", 12);
    check_npy_error(path, "no 'fortran_order' entry");
    write_npy(path, "{'descr': '<f4', 'fortran_order': False, 'shape': (3,), 'x': 1}", 12);
    check_npy_error(path, "unexpected key 'x'");
    write_npy(path, "['descr', '<f4']", 12);
    check_npy_error(path, "not a dict");

    // Magic, version, header length.
    write_bytes(path, "PK\x03\x04 a zip file, not an array");
    check_npy_error(path, "not a .npy file");
    std::string file = read_bytes(path);
    write_npy(path, dict("'<f4'", "False", "(3,)"), 12);
    file = read_bytes(path);
    file[6] = 4;
    write_bytes(path, file);
    check_npy_error(path, "unsupported .npy format version 4.0");
    file[6] = 1;
    file[8] = '\xff'; // header length 0x..ff: far past the end of the 140-byte file
    file[9] = '\x7f';
    write_bytes(path, file);
    check_npy_error(path, "truncated");
    check_npy_error(dir.file("missing.npy"), "cannot open");
}

BOOST_AUTO_TEST_CASE(numpy_loads_generated_files, *LOADERLENS_MAY_SKIP) {
    if (!have_numpy()) return;
    TempDir dir;
    struct Case {
        std::string dtype;
        std::vector<std::int64_t> shape;
        int version;
    };
    const std::vector<Case> cases{{"f4", {3, 8, 8}, 0}, {"f2", {5}, 1}, {"f8", {}, 2},
                                  {"u1", {3, 4}, 3},    {"i8", {2}, 0}, {"b1", {7}, 0},
                                  {"i2", {3, 3}, 2},    {"u4", {1}, 0}};
    // The shape, the dtype, the format version, and whether the values are valid for the dtype.
    const std::string script = R"(import sys, numpy as np
a = np.load(sys.argv[1], mmap_mode='r')
with open(sys.argv[1], 'rb') as f: v = np.lib.format.read_magic(f)
ok = bool(((a >= 0) & (a < 1)).all()) if a.dtype.kind == 'f' else (
     bool(np.isin(a.view(np.uint8), [0, 1]).all()) if a.dtype.kind == 'b' else True)
print(a.shape, a.dtype.str, v[0], ok))";
    for (const Case& c : cases) {
        const std::string path = dir.file("gen-" + c.dtype + ".npy");
        MkdataOptions options = npy_options(path, 25, c.shape, c.dtype, 7);
        options.npy_version = c.version;
        const DatasetLayout layout = make_dataset(options);
        std::vector<std::int64_t> shape{25};
        shape.insert(shape.end(), c.shape.begin(), c.shape.end());
        std::ostringstream shape_text;
        shape_text << "(";
        for (std::size_t i = 0; i < shape.size(); ++i)
            shape_text << (i ? ", " : "") << shape[i];
        shape_text << (shape.size() == 1 ? ",)" : ")");
        const std::string descr = (c.dtype[1] == '1' ? "|" : "<") + c.dtype;
        const RunResult result = python(script, {path});
        BOOST_TEST_INFO(result.err);
        BOOST_TEST(result.out == shape_text.str() + " " + descr + " " +
                                     std::to_string(c.version == 0 ? 1 : c.version) + " True\n");
        BOOST_TEST(layout.description == "npy " + descr + " " + shape_text.str());
    }
}

BOOST_AUTO_TEST_CASE(header_bytes_match_numpy_save, *LOADERLENS_MAY_SKIP) {
    if (!have_numpy()) return;
    TempDir dir;
    const std::string path = dir.file("numpy.npy");
    for (const auto& [dtype, shape] :
         std::vector<std::pair<std::string, std::vector<std::int64_t>>>{
             {"<f4", {10, 3, 32, 32}}, {"|u1", {1000}}, {">i2", {123456789, 0}}}) {
        std::string shape_text;
        for (std::int64_t dim : shape)
            shape_text += std::to_string(dim) + ",";
        const RunResult result = python("import sys, numpy as np; np.save(sys.argv[1], np.zeros((" +
                                            shape_text + "), dtype='" + dtype + "'))",
                                        {path});
        BOOST_REQUIRE_MESSAGE(result.exit_code == 0, result.err);
        const std::string header = make_npy_header(dtype, shape);
        BOOST_TEST(read_bytes(path).substr(0, header.size()) == header);
    }
}

BOOST_AUTO_TEST_CASE(reads_files_numpy_writes, *LOADERLENS_MAY_SKIP) {
    if (!have_numpy()) return;
    TempDir dir;
    const RunResult result = python(R"(import sys, numpy as np
d = sys.argv[1]
np.save(d + '/f4.npy', np.ones((6, 3, 2), dtype='<f4'))
np.save(d + '/be.npy', np.arange(10, dtype='>i4'))
np.save(d + '/bool.npy', np.zeros((4, 5), dtype=bool))
np.save(d + '/c8.npy', np.zeros((3,), dtype=np.complex64))
np.save(d + '/time.npy', np.zeros((3,), dtype='datetime64[ns]'))
np.save(d + '/str.npy', np.array(['ab', 'cde']))
for version in (2, 3):
    with open(d + '/v%d.npy' % version, 'wb') as f:
        np.lib.format.write_array(f, np.ones((9, 4), dtype='<f8'), version=(version, 0))
np.save(d + '/fortran.npy', np.asfortranarray(np.ones((3, 4))))
np.save(d + '/object.npy', np.array([1, 'a', None], dtype=object), allow_pickle=True)
np.save(d + '/zero_d.npy', np.float32(1.5))
with open(d + '/structured.npy', 'wb') as f:
    np.save(f, np.zeros(3, dtype=[('x', '<f4'), ('y', '<i8')])))",
                                    {dir.path().string()});
    BOOST_REQUIRE_MESSAGE(result.exit_code == 0, result.err);
    auto layout = [&](const std::string& name) { return inspect_dataset(dir.file(name)); };
    BOOST_TEST(layout("f4.npy").description == "npy <f4 (6, 3, 2)");
    BOOST_TEST(layout("f4.npy").record_bytes == 24);
    BOOST_TEST(layout("f4.npy").data_offset == 128);
    BOOST_TEST(layout("be.npy").description == "npy >i4 (10,)");
    BOOST_TEST(layout("bool.npy").description == "npy |b1 (4, 5)");
    BOOST_TEST(layout("c8.npy").record_bytes == 8);
    BOOST_TEST(layout("time.npy").description == "npy <M8[ns] (3,)");
    BOOST_TEST(layout("str.npy").record_bytes == 12); // <U3: 3 UCS-4 characters
    for (int version : {2, 3}) {
        const NpyHeader header = read_npy_header(dir.file("v" + std::to_string(version) + ".npy"));
        BOOST_TEST(header.major_version == version);
        BOOST_TEST((header.shape == std::vector<std::int64_t>{9, 4}));
        BOOST_TEST(header.data_offset % 64 == 0);
    }
    check_npy_error(dir.file("fortran.npy"), "Fortran-order");
    check_npy_error(dir.file("object.npy"), "object arrays");
    check_npy_error(dir.file("zero_d.npy"), "no sample axis");
    check_npy_error(dir.file("structured.npy"), "structured dtypes");
}

BOOST_AUTO_TEST_CASE(generation_is_deterministic) {
    TempDir dir;
    auto npy_data = [&](const std::string& name, std::int64_t count, std::uint64_t seed,
                        const std::string& dtype) {
        const DatasetLayout layout =
            make_dataset(npy_options(dir.file(name), count, {3, 5}, dtype, seed));
        return read_bytes(layout.path).substr(static_cast<std::size_t>(layout.data_offset));
    };
    for (const std::string dtype : {"f4", "f2", "u1", "b1"}) {
        const std::string a = npy_data("a.npy", 40, 1, dtype);
        BOOST_TEST(a == npy_data("b.npy", 40, 1, dtype));
        BOOST_TEST(a != npy_data("c.npy", 40, 2, dtype));
        // Record i depends on (seed, i) only: fewer records are a prefix.
        BOOST_TEST(npy_data("d.npy", 15, 1, dtype) == a.substr(0, a.size() * 15 / 40));
        for (const char* name : {"a.npy", "b.npy", "c.npy", "d.npy"})
            fs::remove(dir.file(name));
    }
    // Records larger than the write chunk are cut into pieces; their content must not change.
    make_dataset(record_options(DatasetKind::raw, dir.file("big.raw"), 3, (5 << 20) + 3, 9));
    make_dataset(record_options(DatasetKind::raw, dir.file("one.raw"), 1, (5 << 20) + 3, 9));
    const std::string big = read_bytes(dir.file("big.raw")), one = read_bytes(dir.file("one.raw"));
    BOOST_TEST((big.substr(0, one.size()) == one));
    BOOST_TEST((big.substr(one.size(), one.size()) != one));
}

BOOST_AUTO_TEST_CASE(raw_layout_and_errors) {
    TempDir dir;
    const std::string path = dir.file("records.raw");
    const DatasetLayout made = make_dataset(record_options(DatasetKind::raw, path, 100, 1000));
    BOOST_TEST(fs::file_size(path) == 100'000u);
    const DatasetLayout layout = inspect_dataset(path, 1000);
    BOOST_TEST((layout.kind == DatasetKind::raw));
    BOOST_TEST(layout.data_file == path);
    BOOST_TEST(layout.record_count == 100);
    BOOST_TEST(layout.record_bytes == 1000);
    BOOST_TEST(layout.data_offset == 0);
    BOOST_TEST(layout.description == "raw 100 x 1000 B");
    BOOST_TEST(made.description == layout.description);
    BOOST_TEST(inspect_dataset(path, 500).record_count == 200);
    check_error([&] { inspect_dataset(path); }, path, "--record-size");
    check_error([&] { inspect_dataset(path, 3000); }, path, "not a multiple of the record size");
    check_error([&] { inspect_dataset(path, 0); }, path, "must be positive");
    write_bytes(dir.file("empty.raw"), "");
    check_error([&] { inspect_dataset(dir.file("empty.raw"), 4); }, dir.file("empty.raw"),
                "empty dataset");
    check_error([&] { inspect_dataset(dir.file("nothing")); }, dir.file("nothing"), "No such file");
    BOOST_TEST(std::string(to_string(DatasetKind::raw)) == "raw");
}

BOOST_AUTO_TEST_CASE(lmdb_environment_and_keys) {
    BOOST_TEST(lmdb_key(1) == std::string("\0\0\0\0\0\0\0\x01", 8));
    BOOST_TEST(lmdb_key(0x0102030405060708) == "\x01\x02\x03\x04\x05\x06\x07\x08");
    BOOST_TEST((lmdb_key(255) < lmdb_key(256))); // byte order is index order

    TempDir dir;
    const std::string env_dir = dir.file("env");
    const DatasetLayout made =
        make_dataset(record_options(DatasetKind::lmdb, env_dir, 50, 3000, 5));
    BOOST_TEST(fs::is_regular_file(env_dir + "/data.mdb"));
    BOOST_TEST(fs::is_regular_file(env_dir + "/lock.mdb"));
    BOOST_TEST((made.kind == DatasetKind::lmdb));
    BOOST_TEST(made.data_file == env_dir + "/data.mdb");
    BOOST_TEST(made.record_count == 50);
    BOOST_TEST(made.record_bytes == 3000);
    BOOST_TEST(made.description == "lmdb 50 x 3000 B");

    // Every entry, through LMDB itself.
    MDB_env* env = nullptr;
    BOOST_REQUIRE(mdb_env_create(&env) == 0);
    BOOST_REQUIRE(mdb_env_open(env, env_dir.c_str(), MDB_RDONLY | MDB_NOLOCK, 0644) == 0);
    MDB_txn* txn = nullptr;
    BOOST_REQUIRE(mdb_txn_begin(env, nullptr, MDB_RDONLY, &txn) == 0);
    MDB_dbi dbi = 0;
    BOOST_REQUIRE(mdb_dbi_open(txn, nullptr, 0, &dbi) == 0);
    MDB_cursor* cursor = nullptr;
    BOOST_REQUIRE(mdb_cursor_open(txn, dbi, &cursor) == 0);
    MDB_val key{}, value{};
    std::int64_t index = 0;
    std::string record_7;
    for (int op = MDB_FIRST; mdb_cursor_get(cursor, &key, &value, MDB_cursor_op(op)) == 0;
         op = MDB_NEXT, ++index) {
        BOOST_TEST(std::string(static_cast<char*>(key.mv_data), key.mv_size) == lmdb_key(index));
        BOOST_TEST(value.mv_size == 3000u);
        if (index == 7) record_7.assign(static_cast<char*>(value.mv_data), value.mv_size);
    }
    BOOST_TEST(index == 50);
    mdb_cursor_close(cursor);
    mdb_txn_abort(txn);
    mdb_env_close(env);

    // Same seed, same records, whatever the count.
    make_dataset(record_options(DatasetKind::raw, dir.file("same.raw"), 8, 3000, 5));
    BOOST_TEST((read_bytes(dir.file("same.raw")).substr(7 * 3000) == record_7));

    // Directories that are not environments.
    fs::create_directory(dir.file("plain"));
    check_error([&] { inspect_dataset(dir.file("plain")); }, dir.file("plain"),
                "not an LMDB environment (no data.mdb");
    fs::create_directory(dir.file("garbage"));
    make_file(dir.file("garbage") + "/data.mdb", 64 << 10);
    check_error([&] { inspect_dataset(dir.file("garbage")); }, dir.file("garbage"),
                "not an LMDB environment (");
    write_foreign_env(dir.file("text_keys"), {{"00000000", "abc"}, {"00000001", "def"}});
    check_error([&] { inspect_dataset(dir.file("text_keys")); }, dir.file("text_keys"),
                "8-byte big-endian");
    write_foreign_env(dir.file("sizes"), {{lmdb_key(0), "abc"}, {lmdb_key(1), "defg"}});
    check_error([&] { inspect_dataset(dir.file("sizes")); }, dir.file("sizes"),
                "records of different sizes (the first has 3 bytes, the last 4)");
    write_foreign_env(dir.file("no_records"), {});
    check_error([&] { inspect_dataset(dir.file("no_records")); }, dir.file("no_records"),
                "empty dataset");
    fs::create_directory(dir.file("empty"));
    write_bytes(dir.file("empty") + "/data.mdb", "");
    check_error([&] { inspect_dataset(dir.file("empty")); }, dir.file("empty"),
                "not an LMDB environment (data.mdb is empty)");
}

BOOST_AUTO_TEST_CASE(make_dataset_refuses_and_cleans_up) {
    TempDir dir;
    const std::string path = dir.file("data.npy");
    make_dataset(npy_options(path, 10, {4}));
    const std::string before = read_bytes(path);
    check_error([&] { make_dataset(npy_options(path, 10, {4}, "f4", 3)); }, path, "--force");
    BOOST_TEST((read_bytes(path) == before));
    MkdataOptions forced = npy_options(path, 10, {4}, "f4", 3);
    forced.force = true;
    make_dataset(forced);
    BOOST_TEST((read_bytes(path) != before));

    // --force never deletes a directory that is not an LMDB environment.
    fs::create_directories(dir.file("precious/sub"));
    forced.path = dir.file("precious");
    check_error([&] { make_dataset(forced); }, forced.path, "not replacing it");
    BOOST_TEST(fs::exists(dir.file("precious/sub")));

    // An error (here from the progress callback, as on Ctrl-C) leaves nothing behind.
    for (DatasetKind kind : {DatasetKind::raw, DatasetKind::lmdb}) {
        MkdataOptions options = record_options(kind, dir.file("interrupted"), 3000, 4096);
        options.progress = [](std::int64_t done, std::int64_t) {
            if (done > 0) throw DatasetError("stop");
        };
        BOOST_CHECK_THROW(make_dataset(options), DatasetError);
    }
    std::vector<std::string> left;
    for (const auto& entry : fs::directory_iterator(dir.path()))
        left.push_back(entry.path().filename().string());
    std::sort(left.begin(), left.end());
    BOOST_TEST((left == std::vector<std::string>{"data.npy", "precious"}));

    BOOST_CHECK_THROW(make_dataset(npy_options(dir.file("x.npy"), 0, {4})), DatasetError);
    BOOST_CHECK_THROW(make_dataset(npy_options(dir.file("x.npy"), 4, {4}, "f3")), DatasetError);
    BOOST_CHECK_THROW(make_dataset(record_options(DatasetKind::raw, dir.file("x"), 4, 0)),
                      DatasetError);
    check_error([&] { make_dataset(npy_options(dir.file("no/such/dir.npy"), 4, {4})); },
                dir.file("no/such/dir.npy"), "cannot create");
}

BOOST_AUTO_TEST_CASE(mkdata_command) {
    TempDir dir;
    const std::string path = dir.file("cli.npy");
    RunResult result = run({cli_path(), "mkdata", "npy", path, "--count", "20", "--shape", "3x4",
                            "--dtype", "u1", "--seed", "4"});
    BOOST_REQUIRE_MESSAGE(result.exit_code == 0, result.err);
    BOOST_TEST(one_line(result.out));
    BOOST_TEST(result.out.find(path) != std::string::npos);
    BOOST_TEST(result.out.find("npy |u1 (20, 3, 4)") != std::string::npos);
    BOOST_TEST(result.err.empty()); // no progress bar when stderr is not a terminal
    const std::string before = read_bytes(path);

    // Refuses to overwrite without --force, leaving the file as it was.
    result = run({cli_path(), "mkdata", "npy", path, "--count", "20", "--seed", "5"});
    BOOST_TEST(result.exit_code == 2);
    BOOST_TEST(one_line(result.err));
    BOOST_TEST(result.err.find("--force") != std::string::npos);
    BOOST_TEST((read_bytes(path) == before));
    result = run({cli_path(), "mkdata", "npy", path, "--count", "20", "--seed", "5", "--force"});
    BOOST_TEST(result.exit_code == 0);
    BOOST_TEST((read_bytes(path) != before));

    // Bad input: exit 2 and one line.
    for (const std::vector<std::string>& args : std::vector<std::vector<std::string>>{
             {"npy", dir.file("a.npy"), "--count", "3", "--shape", "3xx4"},
             {"npy", dir.file("a.npy"), "--count", "3", "--shape", "0x4"},
             {"npy", dir.file("a.npy"), "--count", "3", "--dtype", "f3"},
             {"npy", dir.file("a.npy"), "--count", "3", "--npy-version", "4"},
             {"npy", dir.file("a.npy")},
             {"npy", dir.file("a.npy"), "--count", "3", "--size", "1MiB"},
             {"npy", dir.file("a.npy"), "--size", "10"},
             {"raw", dir.file("a.raw"), "--count", "3"},
             {"raw", dir.file("a.raw"), "--count", "3", "--record-size", "12parsecs"},
             {"lmdb", dir.file("env"), "--count", "0", "--value-size", "4KiB"},
             {"tar", dir.file("a.tar"), "--count", "3"}}) {
        std::vector<std::string> argv{cli_path(), "mkdata"};
        argv.insert(argv.end(), args.begin(), args.end());
        result = run(argv);
        BOOST_TEST_CONTEXT(args[0] << " " << args.back()) {
            BOOST_TEST(result.exit_code == 2);
            BOOST_TEST(one_line(result.err), result.err);
            BOOST_TEST(result.out.empty());
        }
    }
    BOOST_TEST(!fs::exists(dir.file("a.npy")));

    // --size picks the count.
    result = run({cli_path(), "mkdata", "raw", dir.file("sized.raw"), "--size", "1MiB",
                  "--record-size", "4KiB"});
    BOOST_TEST(result.exit_code == 0, result.err);
    BOOST_TEST(inspect_dataset(dir.file("sized.raw"), 4096).record_count == 256);
    result = run({cli_path(), "mkdata", "lmdb", dir.file("env"), "--size", "300KiB", "--value-size",
                  "100KiB"});
    BOOST_TEST(result.exit_code == 0, result.err);
    BOOST_TEST(result.out.find("lmdb 3 x 102400 B") != std::string::npos);
}

BOOST_AUTO_TEST_SUITE_END()
