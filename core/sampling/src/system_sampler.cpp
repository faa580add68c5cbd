// SPDX-License-Identifier: MIT
#include "loaderlens/system_sampler.hpp"

#include "loaderlens/proc_text.hpp"

#include <array>
#include <sys/statvfs.h>

namespace loaderlens {

SystemSample read_system() {
    SystemSample s;
    if (auto text = read_text_file("/proc/meminfo")) {
        const std::array<KbField, 5> fields{{
            {"MemTotal", &s.mem_total},
            {"MemAvailable", &s.mem_available},
            {"Cached", &s.cached},
            {"Shmem", &s.shmem},
            {"Dirty", &s.dirty},
        }};
        parse_kb_fields(*text, fields);
    }
    struct statvfs fs {};
    if (statvfs("/dev/shm", &fs) == 0) {
        const std::int64_t block = static_cast<std::int64_t>(fs.f_frsize);
        s.devshm_size = static_cast<std::int64_t>(fs.f_blocks) * block / 1024;
        s.devshm_used = static_cast<std::int64_t>(fs.f_blocks - fs.f_bfree) * block / 1024;
    }
    return s;
}

} // namespace loaderlens
