// SPDX-License-Identifier: MIT
#include "hdf5_safety.hpp"

namespace loaderlens::probes::hdf5_safety {

namespace {

// Up to this many chunks, every place the chunk shape puts one is looked up in the chunk index;
// over it, `spot_checked_chunks` spread over the dataset. libhdf5 1.10's lookup by coordinates
// walks the index each time (0.45 ms per lookup in an index of 20,000 chunks).
constexpr std::uint64_t walked_chunks_max = 1024;
constexpr std::uint64_t spot_checked_chunks = 32;
// HDF5's own limit for one chunk (the layout message stores its size in 32 bits).
constexpr std::uint64_t chunk_bytes_max = (1ull << 32) - 1;

// zlib's compressBound plus fletcher32's 4 bytes and slack for szip, scaleoffset and nbit
// headers: no filter this loader accepts stores a chunk larger than this. A larger stored chunk
// is damage, and refusing it bounds what a deflate bomb can inflate to (at most ~1032 bytes per
// stored byte: libhdf5 1.10's deflate filter grows its buffer without limit).
std::uint64_t stored_chunk_max(std::uint64_t chunk_bytes) {
    return chunk_bytes + chunk_bytes / 4096 + chunk_bytes / 16384 + 64;
}

// The filters libhdf5 1.10 carries itself; anything else would be a plugin (not loaded, see
// silence_hdf5_errors) or damage.
bool known_filter(H5Z_filter_t filter) {
    return filter == H5Z_FILTER_DEFLATE || filter == H5Z_FILTER_SHUFFLE ||
           filter == H5Z_FILTER_FLETCHER32 || filter == H5Z_FILTER_SZIP ||
           filter == H5Z_FILTER_NBIT || filter == H5Z_FILTER_SCALEOFFSET;
}

struct Space { // closed on every return
    hid_t id;
    ~Space() {
        if (id >= 0) H5Sclose(id);
    }
};

std::string coordinates(const std::vector<hsize_t>& at) {
    std::string out = "(";
    for (std::size_t i = 0; i < at.size(); ++i)
        out += (i ? ", " : "") + std::to_string(at[i]);
    return out + ")";
}

// The first source of a virtual dataset, as FILE:DATASET ("." is the file itself).
std::string first_source(hid_t plist) {
    char file[256] = {}, dataset[256] = {};
    if (H5Pget_virtual_filename(plist, 0, file, sizeof file) < 0 ||
        H5Pget_virtual_dsetname(plist, 0, dataset, sizeof dataset) < 0) {
        H5Eclear2(H5E_DEFAULT);
        return "";
    }
    return std::string(file) + ":" + dataset;
}

std::string chunk_refusal(hid_t dataset, hid_t plist, const std::vector<hsize_t>& dims,
                          std::uint64_t element_bytes, std::uint64_t file_bytes, int filters) {
    const int rank = static_cast<int>(dims.size());
    std::vector<hsize_t> chunk(dims.size(), 0), maxdims(dims.size(), 0);
    if (H5Pget_chunk(plist, rank, chunk.data()) != rank)
        return "its chunks have another rank than its " + std::to_string(rank) + " dimensions";
    // All selected: H5Dget_num_chunks of 1.10.8 takes no H5S_ALL.
    const Space space{H5Dget_space(dataset)};
    const int got =
        space.id >= 0 ? H5Sget_simple_extent_dims(space.id, nullptr, maxdims.data()) : -1;
    if (got != rank) return "its maximum shape cannot be read";
    std::uint64_t chunk_bytes = element_bytes, grid = 1;
    for (std::size_t i = 0; i < dims.size(); ++i) {
        const std::string dimension =
            "chunk dimension " + std::to_string(i) + " is " + std::to_string(chunk[i]);
        if (chunk[i] == 0) return dimension;
        // HDF5 refuses to create such a chunk for a dimension that cannot grow.
        if (maxdims[i] != H5S_UNLIMITED && chunk[i] > maxdims[i])
            return dimension + ", larger than the dataset's " + std::to_string(maxdims[i]) +
                   ": the chunk shape is not the one the data was written with";
        if (__builtin_mul_overflow(chunk_bytes, chunk[i], &chunk_bytes) ||
            chunk_bytes > chunk_bytes_max)
            return "chunks of more than 4 GiB (shape " + coordinates(chunk) + ")";
        if (__builtin_mul_overflow(grid, (dims[i] + chunk[i] - 1) / chunk[i], &grid))
            return "more chunks than 64 bits count (chunk shape " + coordinates(chunk) + ")";
    }
    hsize_t stored = 0;
    if (H5Dget_num_chunks(dataset, space.id, &stored) < 0) {
        H5Eclear2(H5E_DEFAULT);
        return "its chunk index cannot be read";
    }
    const std::string mismatch =
        ": the chunk shape " + coordinates(chunk) + " does not match the chunk index";
    if (stored > grid)
        return "its chunk index holds " + std::to_string(stored) + " chunks, more than the " +
               std::to_string(grid) + " its shape has room for" + mismatch;
    // Where the chunk shape puts chunks: the index must hold those, each inside the file, and of
    // the size the shape says (unfiltered) or a filter could make of it; when every place is
    // looked at, the index must hold nothing else.
    const bool every = grid <= walked_chunks_max;
    const std::uint64_t looked = every ? grid : spot_checked_chunks;
    std::vector<hsize_t> at(dims.size(), 0);
    hsize_t found = 0;
    for (std::uint64_t n = 0; n < looked; ++n) {
        std::uint64_t k = every ? n : n * (grid - 1) / (looked - 1);
        for (std::size_t i = dims.size(); i-- > 0;) { // chunk k, the last dimension fastest
            const std::uint64_t across = (dims[i] + chunk[i] - 1) / chunk[i];
            at[i] = (k % across) * chunk[i];
            k /= across;
        }
        unsigned mask = 0;
        haddr_t address = HADDR_UNDEF;
        hsize_t size = 0;
        if (H5Dget_chunk_info_by_coord(dataset, at.data(), &mask, &address, &size) < 0) {
            H5Eclear2(H5E_DEFAULT);
            return "its chunk index cannot be read at chunk " + coordinates(at);
        }
        const std::string where = "chunk " + coordinates(at) + " ";
        if (address != HADDR_UNDEF) {
            ++found;
            if (address > file_bytes || size > file_bytes - address)
                return where + "lies past the end of the file (" + std::to_string(size) +
                       " bytes at " + std::to_string(address) + ")";
            if (filters == 0 && size != chunk_bytes)
                return where + "stores " + std::to_string(size) + " bytes, its shape needs " +
                       std::to_string(chunk_bytes) + mismatch;
            if (size > stored_chunk_max(chunk_bytes))
                return where + "stores " + std::to_string(size) + " bytes, more than any " +
                       "accepted filter makes of the " + std::to_string(chunk_bytes) +
                       " its shape holds" + mismatch;
        }
    }
    if (every && found != stored)
        return "its chunk index holds " + std::to_string(stored) + " chunks, " +
               std::to_string(found) + " of them where its shape puts chunks" + mismatch;
    return "";
}

} // namespace

std::string refusal(hid_t dataset, hid_t plist, const std::vector<hsize_t>& dims,
                    std::uint64_t element_bytes, std::uint64_t file_bytes) {
    if (dims.size() > H5S_MAX_RANK) return "rank " + std::to_string(dims.size()) + ": too many";
    {
        std::vector<hsize_t> maxdims(dims.size(), 0);
        const Space space{H5Dget_space(dataset)};
        if (space.id < 0 || H5Sget_simple_extent_dims(space.id, nullptr, maxdims.data()) !=
                                static_cast<int>(dims.size())) {
            H5Eclear2(H5E_DEFAULT);
            return "its maximum shape cannot be read";
        }
        for (std::size_t i = 0; i < dims.size(); ++i)
            if (maxdims[i] != H5S_UNLIMITED && dims[i] > maxdims[i])
                return "dimension " + std::to_string(i) + " is " + std::to_string(dims[i]) +
                       ", over its maximum " + std::to_string(maxdims[i]);
    }
    const H5D_layout_t layout = H5Pget_layout(plist);
    if (layout < 0) {
        H5Eclear2(H5E_DEFAULT);
        return "its storage layout cannot be read";
    }
    if (layout == H5D_VIRTUAL) {
        std::size_t count = 0;
        H5Pget_virtual_count(plist, &count);
        const std::string first = count ? first_source(plist) : "";
        return "virtual dataset (" + std::to_string(count) + " source mapping" +
               (count == 1 ? "" : "s") + (first.empty() ? "" : ", the first " + first) +
               "): not supported (its sources are other datasets, itself included; copy the "
               "data into a real dataset)";
    }
    const int external = H5Pget_external_count(plist);
    if (external != 0) {
        char name[256] = {};
        off_t offset = 0;
        hsize_t size = 0;
        if (external < 0 || H5Pget_external(plist, 0, sizeof name, name, &offset, &size) < 0)
            H5Eclear2(H5E_DEFAULT);
        return "its raw data is in " + std::to_string(external) + " external file" +
               (external == 1 ? "" : "s") +
               (name[0] ? std::string(" (the first ") + name + ")" : "") +
               ": not supported (the file would choose what is read)";
    }
    const int filters = H5Pget_nfilters(plist);
    if (filters < 0) {
        H5Eclear2(H5E_DEFAULT);
        return "its filter pipeline cannot be read";
    }
    for (int i = 0; i < filters; ++i) {
        unsigned flags = 0, config = 0;
        std::size_t values = 0;
        char name[64] = {};
        const H5Z_filter_t filter = H5Pget_filter2(plist, static_cast<unsigned>(i), &flags, &values,
                                                   nullptr, sizeof name, name, &config);
        if (filter < 0 || !known_filter(filter) || H5Zfilter_avail(filter) <= 0) {
            H5Eclear2(H5E_DEFAULT);
            return "filter " + std::to_string(filter) +
                   (name[0] ? std::string(" (") + name + ")" : "") +
                   ": not supported (deflate, shuffle, fletcher32, szip, nbit and scaleoffset, "
                   "as libhdf5 has them)";
        }
    }
    if (layout == H5D_CHUNKED)
        return chunk_refusal(dataset, plist, dims, element_bytes, file_bytes, filters);
    if (layout == H5D_CONTIGUOUS) {
        std::uint64_t bytes = element_bytes;
        for (hsize_t d : dims)
            if (__builtin_mul_overflow(bytes, d, &bytes)) return "its size overflows 64 bits";
        const haddr_t address = H5Dget_offset(dataset);
        H5Eclear2(H5E_DEFAULT); // HADDR_UNDEF: never written, read as the fill value
        if (address != HADDR_UNDEF && (address > file_bytes || bytes > file_bytes - address))
            return "its " + std::to_string(bytes) + " bytes of data at " + std::to_string(address) +
                   " end past the end of the file (" + std::to_string(file_bytes) + " bytes)";
    }
    return "";
}

} // namespace loaderlens::probes::hdf5_safety
