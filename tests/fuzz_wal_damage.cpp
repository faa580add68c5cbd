// SPDX-License-Identifier: MIT
#include "fuzz_wal_damage.hpp"

#include <filesystem>
#include <unistd.h>

namespace loaderlens::test {

namespace fs = std::filesystem;

WalDamage::WalDamage(std::string db) : db_(std::move(db)), wal_(db_ + "-wal") {
    // The WAL header: magic, format, then the database page size (big-endian) at byte 8.
    const std::string header = read_bytes(wal_).substr(0, 32);
    if (header.size() == 32) {
        std::uint64_t size = 0;
        for (int i = 8; i < 12; ++i)
            size = (size << 8) | static_cast<unsigned char>(header[static_cast<std::size_t>(i)]);
        if (size >= 512 && size <= 65536) wal_page_size_ = size;
    }
}

std::size_t WalDamage::kinds() {
    return 9;
}

WalDamage::Made WalDamage::make(std::size_t kind, FuzzRandom& random, const std::string& dir,
                                const std::string& name) const {
    const std::string db = (fs::path(dir) / name).string(), wal = db + "-wal";
    fs::copy_file(db_, db, fs::copy_options::overwrite_existing);
    fs::copy_file(wal_, wal, fs::copy_options::overwrite_existing);
    const std::uint64_t db_bytes = fs::file_size(db), wal_bytes = fs::file_size(wal);
    const std::uint64_t frame = 24 + wal_page_size_;
    const std::uint64_t frames = wal_bytes > 32 ? (wal_bytes - 32) / frame : 0;
    Made made;
    switch (kind % kinds()) {
    case 0:
        made.control = true;
        made.damage = {"none: killed.db and killed.db-wal copied without killed.db-shm",
                       "cp killed.db killed.db-wal copy/"};
        break;
    case 1: {
        std::uint64_t size = 0;
        switch (random.below(4)) {
        case 0:
            size = 0;
            break;
        case 1:
            size = 32;
            break; // the header alone
        case 2:
            size = 32 + frame * random.below(frames + 1);
            break;
        default:
            size = random.below(wal_bytes);
            break;
        }
        made.damage = truncate_to(wal, size, "killed.db-wal");
        break;
    }
    case 2: {
        const std::uint64_t end = random.percent(40)   ? 32
                                  : random.percent(50) ? 32 + 24
                                                       : wal_bytes;
        made.damage = flip_bytes(wal, random, static_cast<int>(random.between(1, 6)), 0, end,
                                 "killed.db-wal");
        break;
    }
    case 3: {
        // A frame's page (behind its 24-byte frame header).
        const std::uint64_t f = random.below(std::max<std::uint64_t>(frames, 1));
        made.damage =
            overwrite(wal, 32 + f * frame + 24,
                      random.percent(50) ? std::string(wal_page_size_, '\0')
                                         : random_bytes(random, wal_page_size_),
                      "frame " + std::to_string(f) + " of the WAL overwritten", "killed.db-wal");
        break;
    }
    case 4:
        fs::remove(wal);
        made.damage = {"killed.db-wal lost (killed.db copied alone)", "rm killed.db-wal"};
        break;
    case 5:
        made.damage = truncate_to(db, random.below(db_bytes + 1), "killed.db");
        break;
    case 6:
        made.damage = db_bytes > 0 ? flip_bytes(db, random, static_cast<int>(random.between(1, 8)),
                                                0, random.percent(50) ? 100 : db_bytes, "killed.db")
                                   : truncate_to(db, 0, "killed.db");
        break;
    case 7: {
        const bool zeros = random.percent(50);
        write_bytes(db + "-shm", zeros ? std::string(32768, '\0') : random_bytes(random, 32768));
        made.damage = {std::string("a stale killed.db-shm of 32 KiB of ") +
                           (zeros ? "zeros" : "random bytes") + " beside db and wal",
                       zeros ? "head -c 32768 /dev/zero > killed.db-shm"
                             : "head -c 32768 /dev/urandom > killed.db-shm"};
        break;
    }
    default:
        made.control = true;
        made.as_nobody = geteuid() == 0;
        made.damage = {"none: killed.db and killed.db-wal in a read-only directory, read by " +
                           std::string(made.as_nobody ? "user nobody" : "this user"),
                       "cp killed.db killed.db-wal rodir/; chmod 555 rodir; "
                       "runuser -u nobody -- loaderlens report rodir/killed.db"};
        for (const auto& file : {db, wal})
            fs::permissions(file,
                            fs::perms::owner_read | fs::perms::group_read | fs::perms::others_read);
        fs::permissions(dir, fs::perms::owner_read | fs::perms::owner_exec | fs::perms::group_read |
                                 fs::perms::group_exec | fs::perms::others_read |
                                 fs::perms::others_exec);
        break;
    }
    return made;
}

} // namespace loaderlens::test
