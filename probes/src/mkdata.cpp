// SPDX-License-Identifier: MIT
// `loaderlens mkdata`: datasets of known size and deterministic content, written with bounded
// memory under a temporary name and renamed into place.
#include "loaderlens/probes/mkdata.hpp"

#include "hdf5_file.hpp"
#include "record_content.hpp"
#include "splitmix.hpp"

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <filesystem>
#include <lmdb.h>
#include <string_view>
#include <sys/stat.h>
#include <unistd.h>

namespace loaderlens::probes {

namespace {

namespace fs = std::filesystem;

// Records are generated and written this much at a time: the memory mkdata needs, whatever the
// dataset size, and the granularity of progress reports.
constexpr std::int64_t chunk_bytes = 4 << 20;
// LMDB keeps a write transaction's dirty pages in memory until the commit.
constexpr std::int64_t lmdb_txn_bytes = 16 << 20;

[[noreturn]] void fail(const std::string& path, const std::string& what) {
    throw DatasetError(path + ": " + what);
}
[[noreturn]] void fail_errno(const std::string& path, const std::string& action) {
    const int error = errno;
    const std::string what = path + ": " + action + " (" + std::strerror(error) + ")";
    if (DatasetWriteError::is_write_failure(error)) throw DatasetWriteError(what);
    throw DatasetError(what);
}

// ---- files -------------------------------------------------------------------------------------

// A path under construction next to the final one; removed (with everything in it) unless
// released, so that an error never leaves a half-written dataset behind.
class TemporaryPath {
  public:
    TemporaryPath(const std::string& final_path, bool directory) : final_(final_path) {
        static std::atomic<unsigned> counter{0};
        fs::path target(final_path);
        if (!target.has_filename()) target = target.parent_path(); // "dir/" names "dir"
        for (int attempt = 0; attempt < 100; ++attempt) {
            const auto tick = std::chrono::steady_clock::now().time_since_epoch().count();
            const std::string name = "." + target.filename().string() + ".mkdata-" +
                                     std::to_string(::getpid()) + "-" +
                                     std::to_string(splitmix::mix(tick + counter++) % 1'000'000);
            const std::string candidate = (target.parent_path() / name).string();
            const int rc = directory
                               ? ::mkdir(candidate.c_str(), 0777)
                               : (fd_ = ::open(candidate.c_str(),
                                               O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666));
            if (rc >= 0) {
                path_ = candidate;
                return;
            }
            if (errno != EEXIST) fail_errno(final_path, "cannot create a file next to it");
        }
        fail(final_path, "cannot find a free temporary name next to it");
    }
    ~TemporaryPath() {
        if (fd_ >= 0) ::close(fd_);
        if (!path_.empty()) {
            std::error_code ignored;
            fs::remove_all(path_, ignored);
        }
    }
    TemporaryPath(const TemporaryPath&) = delete;
    TemporaryPath& operator=(const TemporaryPath&) = delete;

    const std::string& path() const { return path_; }
    int fd() const { return fd_; }
    // close() can report a write error (NFS, quota) that write() did not.
    void close_file() {
        if (fd_ < 0) return;
        const int rc = ::close(fd_);
        fd_ = -1;
        if (rc != 0) fail_errno(final_, "cannot write");
    }
    void release() { path_.clear(); }

  private:
    std::string final_, path_;
    int fd_ = -1;
};

void write_all(int fd, const std::byte* data, std::int64_t size, const std::string& path) {
    while (size > 0) {
        const ssize_t n = ::write(fd, data, static_cast<std::size_t>(size));
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) fail_errno(path, "cannot write");
        data += n;
        size -= n;
    }
}

// --force replaces a file, or a directory holding nothing but an LMDB environment: never a
// directory of other things that a mistyped path happens to name.
void check_replaceable(const std::string& path, bool force) {
    struct stat st {};
    if (::lstat(path.c_str(), &st) != 0) {
        if (errno == ENOENT) return;
        fail_errno(path, "cannot check whether it exists");
    }
    if (!force) fail(path, "already exists; pass --force to replace it");
    if (S_ISREG(st.st_mode) || S_ISLNK(st.st_mode)) return;
    if (!S_ISDIR(st.st_mode)) fail(path, "exists and is not a regular file; not replacing it");
    std::error_code error;
    for (const auto& entry : fs::directory_iterator(path, error)) {
        const std::string name = entry.path().filename().string();
        if (name != "data.mdb" && name != "lock.mdb")
            fail(path, "is a directory with other things than an LMDB environment (" + name +
                           "); not replacing it");
    }
    if (error) fail(path, "cannot list the directory (" + error.message() + ")");
}

void move_into_place(TemporaryPath& temp, const std::string& path, bool force) {
    // RENAME_NOREPLACE: plain rename() would silently replace a file, or an empty directory,
    // that appeared at `path` while the dataset was being written.
    if (::renameat2(AT_FDCWD, temp.path().c_str(), AT_FDCWD, path.c_str(), RENAME_NOREPLACE) == 0) {
        temp.release();
        return;
    }
    if (errno == EINVAL) { // a file system without renameat2 flags
        check_replaceable(path, force);
        std::error_code error;
        if (fs::exists(fs::symlink_status(path))) fs::remove_all(path, error);
        if (error) fail(path, "cannot remove the old dataset (" + error.message() + ")");
        if (::rename(temp.path().c_str(), path.c_str()) != 0)
            fail_errno(path, "cannot rename the new dataset into place");
        temp.release();
        return;
    }
    if (errno != EEXIST && errno != ENOTEMPTY) fail_errno(path, "cannot rename into place");
    check_replaceable(path, force);
    // Swap atomically: readers see the old dataset or the new one, never none. The old one then
    // sits at the temporary name, whose destructor removes it.
    if (::renameat2(AT_FDCWD, temp.path().c_str(), AT_FDCWD, path.c_str(), RENAME_EXCHANGE) != 0)
        fail_errno(path, "cannot replace the old dataset");
}

// ---- writers -----------------------------------------------------------------------------------

// Counts written bytes and reports them every chunk.
struct Progress {
    const MkdataOptions& options;
    std::int64_t total;
    std::int64_t done = 0;
    void add(std::int64_t bytes) {
        done += bytes;
        if (options.progress) options.progress(done, total);
    }
};

// Records 0..count-1 through a fixed buffer into the file, in pieces that keep each record's
// stream aligned to its 8-byte draws.
void write_records(int fd, const MkdataOptions& options, const Dtype& dtype,
                   std::int64_t record_bytes) {
    std::vector<std::byte> buffer(static_cast<std::size_t>(chunk_bytes));
    std::int64_t used = 0;
    Progress progress{options, options.count * record_bytes};
    auto flush = [&] {
        write_all(fd, buffer.data(), used, options.path);
        progress.add(used);
        used = 0;
    };
    for (std::int64_t index = 0; index < options.count; ++index) {
        RecordContent content(options.seed, index, dtype);
        for (std::int64_t remaining = record_bytes; remaining > 0;) {
            if (chunk_bytes - used < 8 && chunk_bytes - used < remaining) flush();
            std::int64_t piece = std::min(remaining, chunk_bytes - used);
            if (piece < remaining) piece -= piece % 8;
            content.fill(buffer.data() + used, piece);
            used += piece;
            remaining -= piece;
            if (used == chunk_bytes) flush();
        }
    }
    if (used > 0) flush();
}

void write_npy(TemporaryPath& temp, const MkdataOptions& options) {
    const Dtype& dtype = find_dtype(options.dtype);
    std::int64_t record_bytes = dtype.itemsize;
    std::vector<std::int64_t> shape{options.count};
    for (std::int64_t dim : options.sample_shape) {
        if (dim < 1) throw DatasetError("--shape: every dimension must be at least 1");
        if (__builtin_mul_overflow(record_bytes, dim, &record_bytes))
            throw DatasetError("--shape: the record size overflows 64 bits");
        shape.push_back(dim);
    }
    std::int64_t total = 0;
    if (__builtin_mul_overflow(record_bytes, options.count, &total))
        fail(options.path, "the dataset size overflows 64 bits");
    if (options.npy_version < 0 || options.npy_version > 3)
        throw DatasetError("--npy-version " + std::to_string(options.npy_version) +
                           ": one of 1, 2, 3");
    const std::string header = make_npy_header(numpy_descr(dtype), shape, options.npy_version);
    write_all(temp.fd(), reinterpret_cast<const std::byte*>(header.data()),
              static_cast<std::int64_t>(header.size()), options.path);
    write_records(temp.fd(), options, dtype, record_bytes);
}

void write_hdf5_file(TemporaryPath& temp, const MkdataOptions& options) {
    const Dtype& dtype = find_dtype(options.dtype);
    Hdf5WriteSpec spec;
    spec.path = temp.path();
    spec.dataset_name = options.hdf5_dataset;
    spec.count = options.count;
    spec.sample_shape = options.sample_shape;
    spec.chunks = options.hdf5_chunks;
    spec.gzip_level = options.hdf5_gzip;
    spec.dtype = options.dtype;
    spec.record_bytes = dtype.itemsize;
    for (std::int64_t dim : options.sample_shape) {
        if (dim < 1) throw DatasetError("--shape: every dimension must be at least 1");
        if (__builtin_mul_overflow(spec.record_bytes, dim, &spec.record_bytes))
            throw DatasetError("--shape: the record size overflows 64 bits");
    }
    std::int64_t total = 0;
    if (__builtin_mul_overflow(spec.record_bytes, options.count, &total))
        fail(options.path, "the dataset size overflows 64 bits");
    if (options.hdf5_gzip < 0 || options.hdf5_gzip > 9)
        throw DatasetError("--gzip " + std::to_string(options.hdf5_gzip) + ": a level 0-9");
    temp.close_file(); // HDF5 writes the file through its own descriptor
    Progress progress{options, total};
    write_hdf5(
        spec, chunk_bytes,
        [&](std::int64_t first, std::int64_t count, std::byte* out) {
            for (std::int64_t i = 0; i < count; ++i)
                RecordContent(options.seed, first + i, dtype)
                    .fill(out + i * spec.record_bytes, spec.record_bytes);
        },
        [&](std::int64_t bytes) { progress.add(bytes); });
}

// Owns an LMDB write environment, so that every error path aborts and closes it.
struct LmdbWriter {
    MDB_env* env = nullptr;
    MDB_txn* txn = nullptr;
    ~LmdbWriter() {
        if (txn) mdb_txn_abort(txn);
        if (env) mdb_env_close(env);
    }
};

// Pages a B-tree of `count` records of `value_bytes` needs, with room to spare: half-full leaves
// for records stored inline, whole overflow pages for large ones, plus branch and meta pages.
std::int64_t lmdb_map_bytes(std::int64_t count, std::int64_t value_bytes, std::int64_t page) {
    constexpr std::int64_t page_header = 16, node_header = 8, key_bytes = 8;
    const std::int64_t node = node_header + key_bytes + value_bytes;
    const std::int64_t per_record = node <= (page - page_header) / 2
                                        ? 2 * (node + 2)
                                        : (page_header + value_bytes + page - 1) / page * page +
                                              2 * (node_header + key_bytes + 8);
    std::int64_t records = 0;
    if (__builtin_mul_overflow(per_record, count, &records) || records > (std::int64_t{1} << 56))
        throw DatasetError("the dataset is too large for one LMDB environment");
    const std::int64_t estimate = records + records / 4 + (64 << 20);
    return (estimate + page - 1) / page * page;
}

void write_lmdb(const std::string& dir, const MkdataOptions& options) {
    auto check = [&](int rc, const char* what) {
        if (rc == MDB_MAP_FULL)
            fail(options.path, "the LMDB map is full: mkdata's size estimate is too small (a bug)");
        if (rc == 0) return;
        // LMDB's own codes are negative; a failed system call gives its errno.
        const std::string message = options.path + ": " + what + " (" + mdb_strerror(rc) + ")";
        if (DatasetWriteError::is_write_failure(rc)) throw DatasetWriteError(message);
        throw DatasetError(message);
    };
    LmdbWriter lmdb;
    check(mdb_env_create(&lmdb.env), "cannot create an LMDB environment");
    // No syncs: a crash leaves only the temporary directory, never a dataset to trust.
    check(mdb_env_open(lmdb.env, dir.c_str(), MDB_NOSYNC, 0666),
          "cannot create the LMDB environment");
    MDB_stat env_stat{};
    check(mdb_env_stat(lmdb.env, &env_stat), "cannot read the LMDB page size");
    check(
        mdb_env_set_mapsize(lmdb.env, static_cast<std::size_t>(lmdb_map_bytes(
                                          options.count, options.record_bytes, env_stat.ms_psize))),
        "cannot size the LMDB map");

    Progress progress{options, options.count * options.record_bytes};
    std::int64_t in_txn = 0, unreported = 0;
    MDB_dbi dbi = 0;
    for (std::int64_t index = 0; index < options.count; ++index) {
        if (!lmdb.txn) {
            check(mdb_txn_begin(lmdb.env, nullptr, 0, &lmdb.txn), "cannot begin a transaction");
            check(mdb_dbi_open(lmdb.txn, nullptr, 0, &dbi), "cannot open the database");
        }
        std::string key_bytes = lmdb_key(index);
        MDB_val key{key_bytes.size(), key_bytes.data()};
        MDB_val value{static_cast<std::size_t>(options.record_bytes), nullptr};
        // MDB_RESERVE: the record is generated straight into its page; MDB_APPEND: keys come in
        // order, so pages are filled completely instead of split in half.
        check(mdb_put(lmdb.txn, dbi, &key, &value, MDB_APPEND | MDB_RESERVE),
              "cannot write a record");
        RecordContent(options.seed, index, raw_bytes)
            .fill(static_cast<std::byte*>(value.mv_data), options.record_bytes);
        in_txn += options.record_bytes;
        unreported += options.record_bytes;
        if (in_txn >= lmdb_txn_bytes || index + 1 == options.count) {
            const int rc = mdb_txn_commit(lmdb.txn);
            lmdb.txn = nullptr; // freed by the commit, even a failed one
            check(rc, "cannot commit");
            in_txn = 0;
        }
        if (unreported >= chunk_bytes || index + 1 == options.count) {
            progress.add(unreported);
            unreported = 0;
        }
    }
}

void check_options(const MkdataOptions& options) {
    if (options.path.empty()) throw DatasetError("no output path");
    if (options.count < 1)
        throw DatasetError("--count " + std::to_string(options.count) +
                           ": at least one record is needed");
    if (options.kind == DatasetKind::npy || options.kind == DatasetKind::hdf5) {
        find_dtype(options.dtype); // throws for an unknown one
        return;
    }
    const char* option = options.kind == DatasetKind::lmdb ? "--value-size" : "--record-size";
    if (options.record_bytes < 1)
        throw DatasetError(std::string(option) + " " + std::to_string(options.record_bytes) +
                           ": must be at least 1 byte");
    // LMDB's limit for a value; beyond, one record would not fit a transaction anyway.
    if (options.kind == DatasetKind::lmdb && options.record_bytes > 0xffffffffLL)
        throw DatasetError(std::string(option) + ": at most 4 GiB - 1 per LMDB value");
    std::int64_t total = 0;
    if (__builtin_mul_overflow(options.record_bytes, options.count, &total))
        fail(options.path, "the dataset size overflows 64 bits");
}

} // namespace

DatasetLayout make_dataset(const MkdataOptions& options) {
    check_options(options);
    // Refuse early: nobody wants to wait for gigabytes to be written and then be told no.
    check_replaceable(options.path, options.force);
    const bool directory = options.kind == DatasetKind::lmdb;
    TemporaryPath temp(options.path, directory);
    if (options.kind == DatasetKind::npy)
        write_npy(temp, options);
    else if (options.kind == DatasetKind::raw)
        write_records(temp.fd(), options, raw_bytes, options.record_bytes);
    else if (options.kind == DatasetKind::hdf5)
        write_hdf5_file(temp, options);
    else
        write_lmdb(temp.path(), options);
    temp.close_file();
    move_into_place(temp, options.path, options.force);
    return inspect_dataset(options.path,
                           options.kind == DatasetKind::raw ? std::optional(options.record_bytes)
                                                            : std::nullopt,
                           options.kind == DatasetKind::hdf5 ? options.hdf5_dataset : "");
}

} // namespace loaderlens::probes
