// SPDX-License-Identifier: MIT
#include "sample_reader.hpp"

#include "hdf5_file.hpp"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <fstream>
#include <memory>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

namespace loaderlens::probes {

namespace {

std::string lmdb_problem(const DatasetLayout& layout, const char* what, int rc) {
    return layout.path + ": " + what + ": " + mdb_strerror(rc);
}

int madvise_code(Advice advice) {
    switch (advice) {
    case Advice::random:
        return MADV_RANDOM;
    case Advice::sequential:
        return MADV_SEQUENTIAL;
    case Advice::willneed:
        return MADV_WILLNEED;
    default:
        return MADV_NORMAL;
    }
}

int fadvise_code(Advice advice) {
    switch (advice) {
    case Advice::random:
        return POSIX_FADV_RANDOM;
    case Advice::sequential:
        return POSIX_FADV_SEQUENTIAL;
    case Advice::willneed:
        return POSIX_FADV_WILLNEED;
    default:
        return POSIX_FADV_NORMAL;
    }
}

const std::size_t page_size = static_cast<std::size_t>(sysconf(_SC_PAGESIZE));

// A private buffer per sample, like the bytes object np.array() or f.read() returns.
std::unique_ptr<std::byte[]> private_buffer(std::size_t bytes) {
    return std::unique_ptr<std::byte[]>(new std::byte[bytes]);
}

} // namespace

SampleReader::SampleReader(const DatasetLayout& layout, const LoaderOptions& options)
    : layout_(layout), mode_(options.read), advice_(options.advice), lmdb_open_(options.lmdb_open),
      hdf5_open_(options.hdf5_open), chunk_cache_bytes_(options.chunk_cache_bytes),
      readahead_(options.readahead) {
    // LMDB environments and HDF5 files are opened here (in main, before fork) only when asked
    // to: else each worker opens its own on first use.
    const bool in_worker = (layout_.kind == DatasetKind::lmdb && lmdb_open_ == LmdbOpen::worker) ||
                           (layout_.kind == DatasetKind::hdf5 && hdf5_open_ == Hdf5Open::worker);
    if (!in_worker) open();
}

SampleReader::~SampleReader() {
    close();
}

void SampleReader::open() {
    if (layout_.kind == DatasetKind::lmdb) return open_lmdb();
    if (layout_.kind == DatasetKind::hdf5) {
        hdf5_ = std::make_unique<Hdf5Dataset>(layout_, chunk_cache_bytes_.value_or(-1));
        return;
    }
    fd_ = ::open(layout_.data_file.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd_ < 0) throw LoaderError(layout_.data_file + ": cannot open: " + std::strerror(errno));
    // inspect_dataset() measured the file; it may have been cut since (a copy still running):
    // a map past its end would kill the reader with SIGBUS.
    const std::int64_t needed = layout_.data_offset + layout_.record_count * layout_.record_bytes;
    struct stat st {};
    if (::fstat(fd_, &st) == 0 && st.st_size < needed) {
        ::close(fd_);
        fd_ = -1;
        throw LoaderError(layout_.data_file + ": shrank to " + std::to_string(st.st_size) +
                          " bytes since it was inspected (" + std::to_string(needed) +
                          " expected)");
    }
    if (mode_ == ReadMode::pread) {
        if (advice_ != Advice::dontneed_after_use) posix_fadvise(fd_, 0, 0, fadvise_code(advice_));
        return;
    }
    map_bytes_ =
        static_cast<std::size_t>(layout_.data_offset + layout_.record_count * layout_.record_bytes);
    void* map = mmap(nullptr, map_bytes_, PROT_READ, MAP_SHARED, fd_, 0);
    if (map == MAP_FAILED) {
        int error = errno;
        ::close(fd_);
        fd_ = -1;
        throw LoaderError(layout_.data_file + ": cannot map: " + std::strerror(error));
    }
    map_ = static_cast<std::byte*>(map);
    apply_advice(map_, map_bytes_);
}

void SampleReader::close() {
    hdf5_.reset();
    if (env_) close_lmdb();
    if (map_) munmap(map_, map_bytes_);
    map_ = nullptr;
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
}

void SampleReader::reopen() {
    close();
    open();
}

namespace {
// The meta pages of data.mdb, checked with pread before LMDB maps the file. inspect_dataset()
// checked them already: a problem now means the file changed under the loader, a failed run
// (exit 1) like a mapped file that shrinks.
LmdbMeta checked_lmdb_meta(const DatasetLayout& layout) {
    const int fd = ::open(layout.data_file.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0) throw LoaderError(layout.data_file + ": cannot open: " + std::strerror(errno));
    struct stat st {};
    try {
        if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode))
            throw LoaderError(layout.data_file + ": no longer a regular file");
        LmdbMeta meta = read_lmdb_meta(fd, st.st_size, layout.path);
        ::close(fd);
        return meta;
    } catch (const DatasetDamage& e) {
        ::close(fd);
        throw LoaderError(layout.path + ": changed since it was inspected: " + e.reason);
    } catch (const DatasetError& e) {
        ::close(fd);
        throw LoaderError(std::string(e.what()) + " (changed since it was inspected)");
    } catch (...) {
        ::close(fd);
        throw;
    }
}

// Where LMDB mapped data.mdb. LMDB does not say (MDB_envinfo.me_mapaddr is the meta page's
// fixed address, null without MDB_FIXEDMAP): its mapping is the one of the file's device and
// inode at offset 0 as long as the environment's map size. A mapping of our own would count the
// pages it touches in RSS a second time.
const std::byte* lmdb_mapping(const std::string& data_file, std::size_t map_size) {
    struct stat st {};
    if (::stat(data_file.c_str(), &st) != 0) return nullptr;
    const std::size_t length = (map_size + page_size - 1) / page_size * page_size;
    std::ifstream maps("/proc/self/maps");
    for (std::string line; std::getline(maps, line);) {
        unsigned long start = 0, end = 0, offset = 0, inode = 0;
        unsigned major_number = 0, minor_number = 0;
        if (std::sscanf(line.c_str(), "%lx-%lx %*s %lx %x:%x %lu", &start, &end, &offset,
                        &major_number, &minor_number, &inode) != 6)
            continue;
        if (inode == st.st_ino && major_number == major(st.st_dev) &&
            minor_number == minor(st.st_dev) && offset == 0 && end - start == length)
            return reinterpret_cast<const std::byte*>(start);
    }
    return nullptr;
}
} // namespace

void SampleReader::open_lmdb() {
    const LmdbMeta meta = checked_lmdb_meta(layout_);
    int rc = mdb_env_create(&env_);
    if (rc != 0) throw LoaderError(lmdb_problem(layout_, "mdb_env_create", rc));
    // MDB_NOLOCK: datasets are read-only (often in read-only directories) and an environment
    // opened before fork is only usable in the workers without the lock table.
    unsigned flags = MDB_RDONLY | MDB_NOLOCK | (readahead_ ? 0u : MDB_NORDAHEAD);
    rc = mdb_env_open(env_, layout_.path.c_str(), flags, 0644);
    MDB_txn* txn = nullptr;
    if (rc == 0) rc = mdb_txn_begin(env_, nullptr, MDB_RDONLY, &txn);
    if (rc == 0) rc = mdb_dbi_open(txn, nullptr, 0, &dbi_);
    if (txn) mdb_txn_abort(txn);
    if (rc != 0) {
        mdb_env_close(env_);
        env_ = nullptr;
        throw LoaderError(lmdb_problem(layout_, "cannot open the environment", rc));
    }
    MDB_envinfo info{};
    MDB_stat stat{};
    if (mdb_env_info(env_, &info) != 0 || mdb_env_stat(env_, &stat) != 0 ||
        stat.ms_psize != meta.page_size || info.me_last_pgno != meta.last_page) {
        close_lmdb();
        throw DatasetDamage(layout_.path, "LMDB reads another meta page than the one checked "
                                          "(was data.mdb replaced?)");
    }
    lmdb_map_ = lmdb_mapping(layout_.data_file, info.me_mapsize);
    if (!lmdb_map_) {
        close_lmdb();
        throw LoaderError(layout_.data_file + ": LMDB's map of it is not in /proc/self/maps");
    }
    lmdb_tree_ = std::make_unique<LmdbTree>(
        meta,
        [map = lmdb_map_, page_size = meta.page_size](std::uint64_t page) {
            return map + page * page_size;
        },
        layout_.path);
    apply_advice(const_cast<std::byte*>(lmdb_map_), info.me_mapsize);
}

void SampleReader::close_lmdb() {
    lmdb_tree_.reset();
    lmdb_map_ = nullptr;
    mdb_env_close(env_);
    env_ = nullptr;
}

void SampleReader::apply_advice(std::byte* address, std::size_t length) {
    if (advice_ != Advice::normal && advice_ != Advice::dontneed_after_use)
        madvise(address, length, madvise_code(advice_));
}

void SampleReader::drop_after_use(const std::byte* address, std::size_t length) {
    // Whole pages inside the sample only: a page shared with the next sample stays mapped.
    auto start = reinterpret_cast<std::uintptr_t>(address);
    auto first = (start + page_size - 1) & ~(page_size - 1);
    auto last = (start + length) & ~(page_size - 1);
    if (last > first) madvise(reinterpret_cast<void*>(first), last - first, MADV_DONTNEED);
}

std::int64_t SampleReader::read(const Sample& sample, std::byte* dest) {
    if (layout_.kind == DatasetKind::hdf5) return read_hdf5(sample, dest);
    return layout_.kind == DatasetKind::lmdb ? read_lmdb(sample, dest) : read_file(sample, dest);
}

// h5py's dataset[i:i+n]: one hyperslab along axis 0, read by HDF5 with pread (sec2 driver)
// through its chunk cache, straight into the batch.
std::int64_t SampleReader::read_hdf5(const Sample& sample, std::byte* dest) {
    if (!hdf5_) open(); // Hdf5Open::worker: opened on first use, in the worker
    hdf5_->read(sample.index, sample.count, dest);
    return sample.count * layout_.record_bytes;
}

std::int64_t SampleReader::read_file(const Sample& sample, std::byte* dest) {
    const auto bytes = static_cast<std::size_t>(sample.count * layout_.record_bytes);
    const std::int64_t offset = layout_.data_offset + sample.index * layout_.record_bytes;
    if (mode_ == ReadMode::pread) {
        auto buffer = private_buffer(bytes);
        std::size_t done = 0;
        while (done < bytes) {
            ssize_t n = ::pread(fd_, buffer.get() + done, bytes - done,
                                static_cast<off_t>(offset + static_cast<std::int64_t>(done)));
            if (n < 0 && errno == EINTR) continue;
            // The file shrank under the running loader: a failed run (exit 1), as a mapped
            // read's SIGBUS is; damage that was there from the start is the dataset's (exit 2).
            if (n <= 0)
                throw LoaderError(layout_.data_file + ": read failed at offset " +
                                  std::to_string(offset) + ": " +
                                  (n == 0 ? "unexpected end of file" : std::strerror(errno)));
            done += static_cast<std::size_t>(n);
        }
        std::memcpy(dest, buffer.get(), bytes);
        if (advice_ == Advice::dontneed_after_use)
            posix_fadvise(fd_, offset, static_cast<off_t>(bytes), POSIX_FADV_DONTNEED);
        return static_cast<std::int64_t>(bytes);
    }
    const std::byte* source = map_ + offset;
    if (mode_ == ReadMode::mmap_copy) {
        auto copy = private_buffer(bytes);
        std::memcpy(copy.get(), source, bytes);
        std::memcpy(dest, copy.get(), bytes);
    } else {
        std::memcpy(dest, source, bytes);
    }
    if (advice_ == Advice::dontneed_after_use) drop_after_use(source, bytes);
    return static_cast<std::int64_t>(bytes);
}

namespace {
// A read transaction that every exit path aborts.
struct ReadTxn {
    MDB_txn* txn = nullptr;
    ~ReadTxn() {
        if (txn) mdb_txn_abort(txn);
    }
};
} // namespace

std::int64_t SampleReader::read_lmdb(const Sample& sample, std::byte* dest) {
    if (!env_) open_lmdb(); // LmdbOpen::worker: opened on first use, in the worker
    ReadTxn read;
    int rc = mdb_txn_begin(env_, nullptr, MDB_RDONLY, &read.txn);
    if (rc != 0) throw LoaderError(lmdb_problem(layout_, "mdb_txn_begin", rc));
    std::int64_t total = 0;
    for (std::int64_t i = 0; i < sample.count; ++i) {
        const std::int64_t index = sample.index + i;
        // Named only when something is wrong: this loop is on the loader's timed read path.
        const auto record = [index] { return "record " + std::to_string(index); };
        std::string key = lmdb_key(index);
        // The path to the key is checked first; LMDB then takes the same one.
        const auto found = lmdb_tree_->find(key);
        if (!found) throw DatasetDamage(layout_.path, record() + " is missing");
        MDB_val k{key.size(), key.data()}, value{};
        rc = mdb_get(read.txn, dbi_, &k, &value);
        if (rc != 0) throw DatasetDamage(layout_.path, record() + ": " + mdb_strerror(rc));
        if (value.mv_data != lmdb_map_ + found->offset || value.mv_size != found->size)
            throw DatasetDamage(layout_.path, record() + ": LMDB found it elsewhere than the page "
                                                         "check did");
        if (value.mv_size != static_cast<std::size_t>(layout_.record_bytes))
            throw DatasetDamage(layout_.path, record() + " has " + std::to_string(value.mv_size) +
                                                  " bytes, the first " +
                                                  std::to_string(layout_.record_bytes));
        const auto bytes = value.mv_size;
        const auto* source = static_cast<const std::byte*>(value.mv_data);
        if (mode_ == ReadMode::mmap_copy) { // bytes(txn.get(key)): a private copy first
            auto copy = private_buffer(bytes);
            std::memcpy(copy.get(), source, bytes);
            std::memcpy(dest + total, copy.get(), bytes);
        } else {
            std::memcpy(dest + total, source, bytes);
        }
        if (advice_ == Advice::dontneed_after_use) drop_after_use(source, value.mv_size);
        total += static_cast<std::int64_t>(bytes);
    }
    return total;
}

std::string SampleReader::describe() const {
    std::string text = to_string(layout_.kind);
    if (layout_.kind == DatasetKind::lmdb) {
        text += std::string(" env opened in ") + to_string(lmdb_open_) + ", MDB_RDONLY|MDB_NOLOCK" +
                (readahead_ ? "" : "|MDB_NORDAHEAD");
    } else if (layout_.kind == DatasetKind::hdf5) {
        text += " " + layout_.hdf5.dataset + " " + layout_.hdf5.storage + ", opened in " +
                to_string(hdf5_open_) + ", sec2 pread, chunk cache " +
                (chunk_cache_bytes_ ? std::to_string(*chunk_cache_bytes_) + " B"
                                    : std::string("1 MiB (HDF5's default)"));
        return text;
    } else {
        text += std::string(", read ") + to_string(mode_);
    }
    return text + ", advice " + to_string(advice_);
}

} // namespace loaderlens::probes
