// SPDX-License-Identifier: MIT
#include "fuzz_lmdb_damage.hpp"

#include <filesystem>
#include <unistd.h>

namespace loaderlens::test {

namespace fs = std::filesystem;

namespace {

// MDB_meta follows the 16-byte page header of pages 0 and 1: magic, version, address, mapsize,
// two MDB_db of 48 bytes (free, main: pad, flags, depth, branch, leaf, overflow pages, entries,
// root), last_pg, txnid. Offsets within the page of the fields a reader trusts.
struct MetaField {
    const char* name;
    std::uint64_t offset;
    int bytes;
};
constexpr MetaField meta_fields[] = {
    {"magic", 16, 4},
    {"version", 20, 4},
    {"mapsize", 32, 8},
    {"main db depth", 16 + 24 + 48 + 6, 2},
    {"main db entries", 16 + 24 + 48 + 32, 8},
    {"main db root", 16 + 24 + 48 + 40, 8},
    {"free db root", 16 + 24 + 40, 8},
    {"last page", 16 + 24 + 96, 8},
    {"txnid", 16 + 24 + 96 + 8, 8},
};

} // namespace

LmdbDamage::LmdbDamage(std::string good) : good_(std::move(good)) {
    page_size_ = static_cast<std::uint64_t>(sysconf(_SC_PAGESIZE)); // LMDB's, at creation
    const std::string data = read_bytes((fs::path(good_) / "data.mdb").string());
    bytes_ = data.size();
    for (std::uint64_t page = 0; (page + 1) * page_size_ <= bytes_; ++page)
        page_flags_.push_back(static_cast<unsigned char>(data[page * page_size_ + 10]) |
                              (static_cast<unsigned char>(data[page * page_size_ + 11]) << 8));
}

std::size_t LmdbDamage::kinds() {
    return 8;
}

std::uint64_t LmdbDamage::page_of(FuzzRandom& random, unsigned flag) const {
    std::vector<std::uint64_t> pages;
    for (std::uint64_t page = 2; page < page_flags_.size(); ++page)
        if (flag == 0 || (page_flags_[page] & flag)) pages.push_back(page);
    if (pages.empty()) return 2 + random.below(std::max<std::uint64_t>(page_flags_.size(), 3) - 2);
    return random.pick(pages);
}

Damage LmdbDamage::make(std::size_t kind, FuzzRandom& random, const std::string& target) const {
    fs::remove_all(target);
    fs::copy(good_, target, fs::copy_options::recursive);
    const std::string data = (fs::path(target) / "data.mdb").string();
    const std::string lock = (fs::path(target) / "lock.mdb").string();
    const std::uint64_t pages = bytes_ / page_size_;
    switch (kind % kinds()) {
    case 0: {
        std::uint64_t size = 0;
        switch (random.below(3)) {
        case 0:
            size = page_size_ * random.below(pages);
            break; // a copy cut at a page
        case 1:
            size = random.below(2 * page_size_);
            break; // in the meta pages
        default:
            size = random.below(bytes_);
            break;
        }
        return truncate_to(data, size, "env/data.mdb");
    }
    case 1: {
        const MetaField& field = meta_fields[random.below(std::size(meta_fields))];
        const std::uint64_t value =
            random.pick<std::uint64_t>({0, 1, 2, pages, pages + 1, 0xffffffffull,
                                        0x7fffffffffffffffull, ~0ull, random.next()});
        const bool both = random.percent(70);
        Damage damage =
            overwrite(data, field.offset, little_endian(value, field.bytes),
                      std::string("meta ") + field.name + " = " + std::to_string(value) +
                          (both ? " in both meta pages" : " in meta page 0"),
                      "env/data.mdb");
        if (both)
            damage.reproducer +=
                "; " + overwrite(data, page_size_ + field.offset, little_endian(value, field.bytes),
                                 "", "env/data.mdb")
                           .reproducer;
        return damage;
    }
    case 2:
        return damage_page(data, random, random.below(2), page_size_, "env/data.mdb");
    case 3:
        return damage_page(data, random, page_of(random, 1), page_size_, "env/data.mdb");
    case 4:
        return damage_page(data, random, page_of(random, 2), page_size_, "env/data.mdb");
    case 5: {
        // A page header's own fields: its number, flags, lower/upper bounds or overflow count.
        const std::uint64_t page = page_of(random, random.pick<unsigned>({0, 1, 2, 4}));
        const std::uint64_t offset = random.pick<std::uint64_t>({0, 10, 12, 14});
        const std::uint64_t value = random.pick<std::uint64_t>({0, 1, 0xffff, 0x7fff, 4095, 4097});
        return overwrite(data, page * page_size_ + offset, little_endian(value, 2),
                         "page " + std::to_string(page) + " header field at +" +
                             std::to_string(offset) + " = " + std::to_string(value),
                         "env/data.mdb");
    }
    case 6:
        switch (random.below(3)) {
        case 0:
            fs::remove(lock);
            return {"lock.mdb missing", "rm env/lock.mdb"};
        case 1:
            write_bytes(lock, random_bytes(random, 8192));
            return {"lock.mdb of random bytes", "head -c 8192 /dev/urandom > env/lock.mdb"};
        default:
            write_bytes(lock, "");
            return {"lock.mdb empty", ": > env/lock.mdb"};
        }
    default:
        switch (random.below(3)) {
        case 0:
            fs::remove(data);
            return {"data.mdb missing", "rm env/data.mdb"};
        case 1:
            fs::remove(data);
            fs::create_directory(data);
            return {"data.mdb is a directory", "rm env/data.mdb; mkdir env/data.mdb"};
        default:
            fs::resize_file(data, std::uint64_t(1) << 30); // sparse: 1 GiB of zeros after it
            return {"data.mdb extended to 1 GiB (sparse zeros)", "truncate -s 1G env/data.mdb"};
        }
    }
}

} // namespace loaderlens::test
