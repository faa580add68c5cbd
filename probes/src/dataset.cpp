// SPDX-License-Identifier: MIT
// Telling the three dataset kinds apart and measuring them: what the reference loader needs to
// address record i (file, offset, record size, count).
#include "loaderlens/probes/dataset.hpp"

#include "hdf5_file.hpp"
#include "lmdb_tree.hpp"

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <limits>
#include <lmdb.h>
#include <map>
#include <string_view>
#include <sys/stat.h>
#include <unistd.h>

namespace loaderlens::probes {

namespace {

[[noreturn]] void fail(const std::string& path, const std::string& what) {
    throw DatasetError(path + ": " + what);
}

std::string python_tuple(const std::vector<std::int64_t>& values) {
    std::string out = "(";
    for (std::size_t i = 0; i < values.size(); ++i)
        out += (i ? ", " : "") + std::to_string(values[i]);
    return out + (values.size() == 1 ? ",)" : ")");
}

struct OpenFile {
    int fd = -1;
    ~OpenFile() {
        if (fd >= 0) ::close(fd);
    }
};

// Owns what an LMDB read needs, so that every error path closes it.
struct LmdbReader {
    MDB_env* env = nullptr;
    MDB_txn* txn = nullptr;
    ~LmdbReader() {
        if (txn) mdb_txn_abort(txn);
        if (env) mdb_env_close(env);
    }
};

// The pages of data.mdb read with pread, nothing mapped (lmdb_tree.hpp says why).
class PreadPages {
  public:
    PreadPages(int fd, std::uint32_t page_size, std::string dataset)
        : fd_(fd), page_size_(page_size), dataset_(std::move(dataset)) {}
    const std::byte* operator()(std::uint64_t page) {
        auto& bytes = pages_[page];
        if (bytes.empty()) {
            bytes.resize(page_size_);
            std::size_t done = 0;
            while (done < page_size_) {
                const ssize_t n = ::pread(fd_, bytes.data() + done, page_size_ - done,
                                          static_cast<off_t>(page * page_size_ + done));
                if (n < 0 && errno == EINTR) continue;
                if (n < 0)
                    fail(dataset_, std::string("cannot read data.mdb: ") + std::strerror(errno));
                if (n == 0) throw DatasetDamage(dataset_, "data.mdb shrank while being read");
                done += static_cast<std::size_t>(n);
            }
        }
        return bytes.data();
    }

  private:
    int fd_;
    std::uint32_t page_size_;
    std::string dataset_;
    std::map<std::uint64_t, std::vector<std::byte>> pages_;
};

DatasetLayout inspect_lmdb(const std::string& dir) {
    const std::string data_file = dir + "/data.mdb";
    OpenFile file{::open(data_file.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK)};
    if (file.fd < 0)
        fail(dir,
             std::string("not an LMDB environment (no data.mdb: ") + std::strerror(errno) + ")");
    struct stat st {};
    if (::fstat(file.fd, &st) != 0)
        fail(dir, std::string("cannot stat data.mdb: ") + std::strerror(errno));
    if (!S_ISREG(st.st_mode)) fail(dir, "not an LMDB environment (data.mdb is not a file)");
    if (st.st_size == 0) fail(dir, "not an LMDB environment (data.mdb is empty)");

    // Checked before LMDB maps the file: LMDB would fault on a page past its end.
    const LmdbMeta meta = read_lmdb_meta(file.fd, st.st_size, dir);
    LmdbTree tree(meta, PreadPages(file.fd, meta.page_size, dir), dir);
    const auto first = tree.first();
    const auto last = tree.last();
    if (!first || !last || meta.entries == 0)
        fail(dir, "empty dataset (the LMDB environment has no records)");

    // LMDB itself must accept it too (it only reads the meta pages here).
    auto not_lmdb = [&](int rc) {
        fail(dir, std::string("not an LMDB environment (") + mdb_strerror(rc) + ")");
    };
    LmdbReader lmdb;
    if (int rc = mdb_env_create(&lmdb.env); rc != 0) not_lmdb(rc);
    // MDB_NOLOCK: dataset directories are often read-only, where lock.mdb cannot be created.
    if (int rc = mdb_env_open(lmdb.env, dir.c_str(), MDB_RDONLY | MDB_NOLOCK, 0644); rc != 0)
        not_lmdb(rc);
    if (int rc = mdb_txn_begin(lmdb.env, nullptr, MDB_RDONLY, &lmdb.txn); rc != 0) not_lmdb(rc);
    MDB_dbi dbi = 0;
    if (int rc = mdb_dbi_open(lmdb.txn, nullptr, 0, &dbi); rc != 0) not_lmdb(rc);
    MDB_stat stat{};
    if (int rc = mdb_stat(lmdb.txn, dbi, &stat); rc != 0) not_lmdb(rc);
    if (stat.ms_entries != meta.entries || stat.ms_psize != meta.page_size)
        fail(dir, "LMDB reads another meta page than the one checked (was data.mdb replaced?)");

    // The loader fetches record i with mdb_get(lmdb_key(i)); keys in any other form (text,
    // file names) would make every lookup miss, so say so here rather than at the first batch.
    if (meta.entries > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()))
        fail(dir, "damaged LMDB meta page: " + std::to_string(meta.entries) + " entries");
    const auto count = static_cast<std::int64_t>(meta.entries);
    if (first->key != lmdb_key(0) || last->key != lmdb_key(count - 1))
        fail(dir, "the keys are not the record indices 0.." + std::to_string(count - 1) +
                      " as 8-byte big-endian integers (see docs/datasets.md)");
    if (first->value.size != last->value.size)
        fail(dir, "records of different sizes (the first has " + std::to_string(first->value.size) +
                      " bytes, the last " + std::to_string(last->value.size) + ")");
    if (first->value.size == 0) fail(dir, "records of 0 bytes");

    DatasetLayout layout;
    layout.kind = DatasetKind::lmdb;
    layout.path = dir;
    layout.data_file = data_file;
    layout.record_count = count;
    layout.record_bytes = static_cast<std::int64_t>(first->value.size);
    layout.description =
        "lmdb " + std::to_string(count) + " x " + std::to_string(layout.record_bytes) + " B";
    return layout;
}

DatasetLayout inspect_npy(const std::string& path) {
    const NpyHeader header = read_npy_header(path);
    std::int64_t record_bytes = header.itemsize;
    for (std::size_t i = 1; i < header.shape.size(); ++i)
        record_bytes *= header.shape[i]; // cannot overflow: read_npy_header checked the product
    const std::string shape = python_tuple(header.shape);
    if (header.shape.front() == 0) fail(path, "empty dataset (shape " + shape + ")");
    if (record_bytes == 0) fail(path, "records of 0 bytes (shape " + shape + ")");

    DatasetLayout layout;
    layout.kind = DatasetKind::npy;
    layout.path = path;
    layout.data_file = path;
    layout.record_count = header.shape.front();
    layout.record_bytes = record_bytes;
    layout.data_offset = header.data_offset;
    layout.description = "npy " + header.descr + " " + shape;
    return layout;
}

DatasetLayout inspect_raw(const std::string& path, std::int64_t file_size,
                          std::optional<std::int64_t> record_bytes) {
    if (!record_bytes)
        fail(path, "not a .npy file; for a file of fixed-size raw records pass --record-size "
                   "BYTES");
    if (*record_bytes <= 0)
        fail(path, "the record size must be positive (got " + std::to_string(*record_bytes) + ")");
    if (file_size == 0) fail(path, "empty dataset (the file has 0 bytes)");
    if (file_size % *record_bytes != 0)
        fail(path, "the file size " + std::to_string(file_size) +
                       " is not a multiple of the record size " + std::to_string(*record_bytes) +
                       " (" + std::to_string(file_size % *record_bytes) + " bytes left over)");
    DatasetLayout layout;
    layout.kind = DatasetKind::raw;
    layout.path = path;
    layout.data_file = path;
    layout.record_count = file_size / *record_bytes;
    layout.record_bytes = *record_bytes;
    layout.description = "raw " + std::to_string(layout.record_count) + " x " +
                         std::to_string(layout.record_bytes) + " B";
    return layout;
}

bool starts_with_npy_magic(const std::string& path) {
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) fail(path, std::string("cannot open (") + std::strerror(errno) + ")");
    char start[6] = {};
    ssize_t n;
    do
        n = ::pread(fd, start, sizeof start, 0);
    while (n < 0 && errno == EINTR);
    const int read_errno = errno;
    ::close(fd);
    if (n < 0) fail(path, std::string("cannot read (") + std::strerror(read_errno) + ")");
    return n == sizeof start && std::string_view(start, sizeof start) == "\x93NUMPY";
}

} // namespace

bool DatasetWriteError::is_write_failure(int error) {
    return error == ENOSPC || error == EDQUOT || error == EFBIG || error == EIO;
}

const char* to_string(DatasetKind kind) {
    switch (kind) {
    case DatasetKind::npy:
        return "npy";
    case DatasetKind::raw:
        return "raw";
    case DatasetKind::lmdb:
        return "lmdb";
    case DatasetKind::hdf5:
        return "hdf5";
    }
    return "unknown";
}

DatasetLayout inspect_dataset(const std::string& path, std::optional<std::int64_t> raw_record_bytes,
                              const std::string& hdf5_dataset) {
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0) fail(path, std::strerror(errno));
    if (S_ISDIR(st.st_mode)) return inspect_lmdb(path);
    if (!S_ISREG(st.st_mode)) fail(path, "not a regular file or a directory");
    if (starts_with_npy_magic(path)) return inspect_npy(path);
    // Named like HDF5 but without its signature: a wrong file, not raw records to guess at.
    const bool hdf5_name = path.ends_with(".h5") || path.ends_with(".hdf5");
    if (has_hdf5_signature(path)) return inspect_hdf5(path, hdf5_dataset);
    if (hdf5_name) fail(path, "not an HDF5 file (no HDF5 signature at 0, 512, 1024, 2048...)");
    if (!hdf5_dataset.empty()) fail(path, "--hdf5-dataset " + hdf5_dataset + ": not an HDF5 file");
    return inspect_raw(path, st.st_size, raw_record_bytes);
}

std::string lmdb_key(std::int64_t index) {
    std::string key(8, '\0');
    auto value = static_cast<std::uint64_t>(index);
    for (int i = 7; i >= 0; --i, value >>= 8)
        key[i] = static_cast<char>(value & 0xff);
    return key;
}

} // namespace loaderlens::probes
