// SPDX-License-Identifier: MIT
// Reads samples of a dataset the way a PyTorch Dataset's __getitem__ would, per read mode.
// Constructed in the main process (np.load(mmap_mode='r') or lmdb.open in Dataset.__init__),
// then used in the workers it forks: maps and file descriptors are inherited.
#pragma once

#include "lmdb_tree.hpp"
#include "loaderlens/probes/loader.hpp"

#include <cstddef>
#include <lmdb.h>
#include <memory>

namespace loaderlens::probes {

class Hdf5Dataset; // hdf5_file.hpp: kept out of this header, with <hdf5.h>

class SampleReader {
  public:
    SampleReader(const DatasetLayout& layout, const LoaderOptions& options);
    ~SampleReader();
    SampleReader(const SampleReader&) = delete;
    SampleReader& operator=(const SampleReader&) = delete;

    // Copies `sample.count` records from `sample.index` into `dest` (collate); returns the bytes
    // taken from the dataset. A damaged dataset (a record missing, of another size, on a corrupt
    // LMDB page; a file shorter than inspected) throws DatasetDamage.
    std::int64_t read(const Sample& sample, std::byte* dest);
    // --reopen-each-epoch: drops this process's map / environment and opens a new one, so the
    // pages it had mapped are no longer counted in its RSS.
    void reopen();
    // What ran, for the loader's config event ("mmap MADV_RANDOM", "lmdb parent MDB_NOLOCK ...").
    std::string describe() const;

  private:
    void open();
    void close();
    void open_lmdb();
    void close_lmdb();
    void apply_advice(std::byte* address, std::size_t length);
    void drop_after_use(const std::byte* address, std::size_t length);
    std::int64_t read_file(const Sample& sample, std::byte* dest);
    std::int64_t read_lmdb(const Sample& sample, std::byte* dest);
    std::int64_t read_hdf5(const Sample& sample, std::byte* dest);

    DatasetLayout layout_;
    ReadMode mode_;
    Advice advice_;
    LmdbOpen lmdb_open_;
    Hdf5Open hdf5_open_;
    std::optional<std::int64_t> chunk_cache_bytes_;
    bool readahead_;
    int fd_ = -1;
    std::byte* map_ = nullptr;
    std::size_t map_bytes_ = 0;
    MDB_env* env_ = nullptr;
    MDB_dbi dbi_ = 0;
    const std::byte* lmdb_map_ = nullptr;
    std::unique_ptr<LmdbTree> lmdb_tree_; // checks each lookup's path before LMDB takes it
    std::unique_ptr<Hdf5Dataset> hdf5_;   // file and dataset, opened in main or in the worker
};

} // namespace loaderlens::probes
